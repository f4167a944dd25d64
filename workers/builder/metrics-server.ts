/**
 * A builder's metrics port (`nodepool-builder --metrics-port`): Prometheus `/metrics` with what
 * it is doing (builds and uploads running, workers, images held, free space in images-dir,
 * builds and uploads finished) plus the process metrics, `/health/live`, and with `buildLogs`
 * its build logs at `/build-logs/<build-id>` (build-log-http.ts), whose URL the builder then
 * reports to the server with each build it starts. Read-only. Paths
 * read as on the server's web status (`/metrics/` is `/metrics`); concurrent scrapes share one
 * render, reused for a second, and the connections held at once are bounded.
 */
import { statfs } from 'node:fs/promises';
import http from 'node:http';
import { Counter, Gauge, Registry } from 'prom-client';
import { coerceError } from '../../lib/errors.js';
import { AdmissionListener } from '../../lib/http/admission.js';
import { requestPath } from '../../lib/http/request-path.js';
import { parseImageId } from '../../lib/images/image-file.js';
import type { Logger } from '../../lib/log.js';
import { METRICS_CONTENT_TYPE, renderMetrics } from '../../lib/metrics/process-metrics.js';
import { SharedRender } from '../../lib/metrics/shared-render.js';
import type { BaseBuilder } from './base-builder.js';
import { BUILD_LOG_PATH, serveBuildLog } from './build-log-http.js';

/** Options of {@link BuilderMetricsServer.start}. */
export interface BuilderMetricsOptions {
  builder: BaseBuilder;
  /** The images-dir whose free space is reported (read at each scrape: reloads apply). */
  imagesDir: () => string;
  host: string;
  /** 0 picks a free port. */
  port: number;
  log: Logger;
  /** Connections held at once; more are refused (default: lib/http/admission.ts). */
  maxConnections?: number;
  /** How long one exposition answers later scrapes (default 1000 ms). */
  reuseMs?: number;
  /**
   * Serve build logs too: from `dir()` (read at each request), advertised to the server as
   * `http://<advertiseHost>:<port>/build-logs/<build-id>`. Absent: no logs, no URL. A log is
   * answered only to its build's log token (build-log-http.ts, log-token.ts); /metrics and
   * /health/live are open.
   */
  buildLogs?: { dir: () => string; advertiseHost: string };
}

export class BuilderMetricsServer {
  private closing: Promise<void> | undefined;

  private constructor(private readonly listener: AdmissionListener, private readonly detach: () => void) {}

  /** Listens; resolves once bound. Thrown: the listen error. */
  static async start(opts: BuilderMetricsOptions): Promise<BuilderMetricsServer> {
    const { registry, detach } = builderRegistry(opts);
    const exposition = new SharedRender({ render: () => renderMetrics(registry), ...(opts.reuseMs === undefined ? {} : { ttlMs: opts.reuseMs }) });
    const server = http.createServer((req, res) => {
      const url = requestPath(req.url);
      const path = url.pathname;
      const send = (status: number, type: string, body: string, headers: Record<string, string> = {}): void => {
        res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), ...headers });
        res.end(req.method === 'HEAD' ? undefined : body);
      };
      const plain = 'text/plain; charset=utf-8';
      const logs = opts.buildLogs && path.startsWith(BUILD_LOG_PATH) ? opts.buildLogs : undefined;
      if (path !== '/metrics' && path !== '/health/live' && !logs) return send(404, plain, `not found: ${path}\n`);
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, plain, 'read-only\n', { Allow: 'GET, HEAD' });
      if (path === '/health/live') return send(200, plain, 'ok\n');
      if (logs) {
        serveBuildLog(req, res, url, { dir: logs.dir, isBuilding: (id) => opts.builder.isBuilding(id) }, opts.log).catch((err: unknown) => {
          opts.log.error('build log could not be served', { path, error: coerceError(err).message });
          if (!res.headersSent) send(500, plain, `internal error: ${coerceError(err).message}\n`);
          else res.destroy();
        });
        return;
      }
      exposition.get().then((body) => send(200, METRICS_CONTENT_TYPE, body), (err: unknown) => {
        opts.log.error('builder metrics failed', { error: coerceError(err).message });
        send(500, plain, `internal error: ${coerceError(err).message}\n`);
      }).catch((err: unknown) => opts.log.error('builder metrics could not answer', { error: coerceError(err).message }));
    });
    let listener: AdmissionListener;
    try {
      listener = await AdmissionListener.listen(server, {
        host: opts.host, port: opts.port, log: opts.log, what: 'builder metrics', priorityPaths: ['/health/live'],
        ...(opts.maxConnections ? { maxConnections: opts.maxConnections } : {}),
      });
    } catch (err) {
      detach();
      throw err;
    }
    const advertised = opts.buildLogs ? buildLogBase(opts.buildLogs.advertiseHost, listener.port) : undefined;
    const m = new BuilderMetricsServer(listener, () => {
      detach();
      if (advertised) opts.builder.advertiseBuildLogs(undefined);
    });
    if (advertised) opts.builder.advertiseBuildLogs(advertised);
    opts.log.info('builder metrics listening', { address: `${opts.host}:${m.port}`, ...(advertised ? { buildLogs: advertised } : {}) });
    return m;
  }

  get port(): number {
    return this.listener.port;
  }

  /** Closes the port. Idempotent. */
  stop(): Promise<void> {
    this.closing ??= (async () => {
      this.detach();
      await this.listener.close();
    })();
    return this.closing;
  }
}

/** `http://<host>:<port>/build-logs/` (an IPv6 address in brackets). */
function buildLogBase(host: string, port: number): string {
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}${BUILD_LOG_PATH}`;
}

/** The builder's metrics; `detach` stops counting its events. */
function builderRegistry(opts: BuilderMetricsOptions): { registry: Registry; detach: () => void } {
  const { builder } = opts;
  const registry = new Registry();
  const registers = [registry];
  const activity = (pick: (a: ReturnType<BaseBuilder['activity']>) => number) => function collect(this: Gauge) {
    this.set(pick(builder.activity()));
  };
  new Gauge({ name: 'nodepool_builder_builds', help: 'Builds running on this builder', registers, collect: activity((a) => a.builds) });
  new Gauge({ name: 'nodepool_builder_uploads', help: 'Uploads running on this builder', registers, collect: activity((a) => a.uploads) });
  new Gauge({ name: 'nodepool_builder_images', help: 'Complete images held in images-dir', registers, collect: activity((a) => a.images) });
  new Gauge({
    name: 'nodepool_builder_workers', help: 'Concurrent jobs this builder takes, by kind (build|upload)', labelNames: ['kind'], registers,
    collect(this: Gauge<'kind'>) {
      const a = builder.activity();
      this.set({ kind: 'build' }, a.buildWorkers);
      this.set({ kind: 'upload' }, a.uploadWorkers);
    },
  });
  new Gauge({
    name: 'nodepool_builder_images_dir_free_bytes', help: 'Bytes free for this builder in images-dir', registers,
    async collect(this: Gauge) {
      try {
        const s = await statfs(opts.imagesDir());
        this.set(s.bavail * s.bsize);
      } catch (err) {
        opts.log.warn('cannot read the free space of images-dir', { error: coerceError(err).message });
      }
    },
  });
  const builds = new Counter({ name: 'nodepool_builder_builds_total', help: 'Builds finished here, by diskimage and result (ready|failed)', labelNames: ['diskimage', 'result'], registers });
  const uploads = new Counter({ name: 'nodepool_builder_uploads_total', help: 'Uploads finished here, by provider', labelNames: ['provider'], registers });
  const onBuild = (s: { diskimage: string }): void => builds.inc({ diskimage: s.diskimage, result: 'ready' });
  const onFailed = (f: { imageId: string }): void => {
    let diskimage = f.imageId;
    try {
      diskimage = parseImageId(f.imageId).diskimage;
    } catch { /* counted under the id as given */ }
    builds.inc({ diskimage, result: 'failed' });
  };
  const onUpload = (u: { provider: string }): void => uploads.inc({ provider: u.provider });
  builder.on('build:complete', onBuild);
  builder.on('build:failed', onFailed);
  builder.on('upload:complete', onUpload);
  return {
    registry,
    detach: () => {
      builder.off('build:complete', onBuild);
      builder.off('build:failed', onFailed);
      builder.off('upload:complete', onUpload);
    },
  };
}
