/**
 * A private RabbitMQ for the full loopback cloud's RPC (Nova, Neutron), on free 127.0.0.1
 * ports only: AMQP, Erlang distribution, and its own epmd (started here in the foreground
 * on a free port, so it is tracked by pid like every other daemon and never shared with
 * another RabbitMQ on the machine). HOME, mnesia and logs live in the state directory.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from '../../lib/lifecycle.js';
import { childEnv, tail, type DaemonGroup } from './openstack-daemons.js';
import { freePort, portOpen } from './processes.js';

const RABBIT_BIN = '/usr/lib/rabbitmq/bin';
const EPMD = '/usr/bin/epmd';

/** A running private RabbitMQ. */
export interface LoopbackRabbitMq {
  /** oslo.messaging's transport URL. */
  transportUrl: string;
  /** Consumer counts of the RPC queues (`rabbitmqctl list_queues`). */
  queueConsumers(): Promise<Map<string, number>>;
}

/** Starts epmd and rabbitmq-server in `daemons` and waits until AMQP is accepted. */
export async function startRabbitMq(dir: string, daemons: DaemonGroup): Promise<LoopbackRabbitMq> {
  const [amqpPort, distPort, epmdPort] = [await freePort(), await freePort(), await freePort()];
  const logDir = path.join(dir, 'log');
  for (const d of ['home', 'mnesia', 'log']) await mkdir(path.join(dir, d), { recursive: true });
  await writeFile(path.join(dir, 'rabbitmq.conf'), `listeners.tcp.default = 127.0.0.1:${amqpPort}\nloopback_users.guest = true\n`);
  await writeFile(path.join(dir, 'enabled_plugins'), '[].\n');
  const env: Record<string, string> = {
    HOME: path.join(dir, 'home'),
    RABBITMQ_NODENAME: 'rabbit@localhost',
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(amqpPort),
    RABBITMQ_DIST_PORT: String(distPort),
    ERL_EPMD_ADDRESS: '127.0.0.1',
    ERL_EPMD_PORT: String(epmdPort),
    RABBITMQ_MNESIA_BASE: path.join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: logDir,
    RABBITMQ_PID_FILE: path.join(dir, 'rabbitmq.pid'),
    RABBITMQ_CONFIG_FILE: path.join(dir, 'rabbitmq'),
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
    RABBITMQ_SERVER_START_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
  };
  // Our own epmd first, in the foreground: the VM then finds it instead of daemonizing one.
  const epmd = await daemons.start('epmd', EPMD, ['-port', String(epmdPort), '-address', '127.0.0.1'],
    { logFile: path.join(logDir, 'epmd.log'), env });
  await waitFor(() => portOpen(epmdPort), { timeoutMs: 10_000, what: 'epmd listening', intervalMs: 25 });
  const stdout = path.join(logDir, 'rabbitmq-server.stdout');
  const server = await daemons.start('rabbitmq-server', path.join(RABBIT_BIN, 'rabbitmq-server'), [], { logFile: stdout, env });
  await waitFor(async () => {
    if (!server.alive() || !epmd.alive()) throw new Error(`rabbitmq-server or epmd exited; ${stdout}:\n${await tail(stdout)}`);
    return portOpen(amqpPort);
  }, { timeoutMs: 90_000, what: `rabbitmq accepting AMQP on 127.0.0.1:${amqpPort}`, intervalMs: 100 });
  return {
    transportUrl: `rabbit://guest:guest@127.0.0.1:${amqpPort}/`,
    async queueConsumers() {
      const { stdout: out } = await promisify(execFile)(path.join(RABBIT_BIN, 'rabbitmqctl'),
        ['-q', 'list_queues', '--no-table-headers', 'name', 'consumers'], { env: childEnv(env), timeout: 30_000 });
      const counts = new Map<string, number>();
      for (const line of out.split('\n')) {
        const [name, n] = line.trim().split(/\s+/);
        if (name && n !== undefined) counts.set(name, Number(n));
      }
      return counts;
    },
  };
}
