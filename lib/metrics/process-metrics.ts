/**
 * prom-client's default process metrics (`process_*`, `nodejs_*`: CPU, memory, event loop
 * lag, GC, handles) in one registry per process: collecting them sets up process-wide
 * observers, so every exporter of the process (server, builder) shares this one.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';

let registry: Registry | undefined;

/** The process's default-metrics registry, created on first use. */
export function processMetrics(): Registry {
  if (!registry) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry });
  }
  return registry;
}

/** The exposition of `registries` followed by the process metrics, in Prometheus text format. */
export async function renderMetrics(...registries: Registry[]): Promise<string> {
  const parts = await Promise.all([...registries, processMetrics()].map((r) => r.metrics()));
  return parts.map((p) => (p.endsWith('\n') ? p : `${p}\n`)).join('');
}

/** Content type of {@link renderMetrics} (Prometheus text format 0.0.4). */
export const METRICS_CONTENT_TYPE: string = Registry.PROMETHEUS_CONTENT_TYPE;
