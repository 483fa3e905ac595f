import { createServer } from 'node:http';
import { z } from 'zod';

/** What a service exposes to Prometheus: prom-client's Registry fits. */
export interface MetricsSource {
  metrics(): Promise<string>;
  readonly contentType: string;
}

export interface MetricsEndpoint {
  /** `http://host:port/metrics`, with the port actually bound (METRICS_PORT=0 takes a free one). */
  readonly url: string;
  close(): Promise<void>;
}

/** Where a service serves `/metrics`; absent: it serves none (`METRICS_PORT=off`). */
export interface MetricsListen {
  host: string;
  port: number;
}

/** Default `/metrics` ports: distinct, so `npm start` runs every service on one machine. The gateway serves it on its own PORT. */
export const METRICS_PORTS = { engine: 9101, persistence: 9102 } as const;

/**
 * `METRICS_PORT` and `METRICS_HOST` of a service's environment: a port
 * (0: a free one, as with the gateway's PORT) or `off`. An empty value counts as unset.
 */
export function metricsEnv(defaultPort: number) {
  const unset = (v: unknown) => (v === '' ? undefined : v);
  return {
    METRICS_PORT: z.preprocess(unset, z.union([z.literal('off'), z.coerce.number().int().min(0).max(65_535)]).default(defaultPort)),
    METRICS_HOST: z.preprocess(unset, z.string().min(1).default('127.0.0.1')),
  };
}

export function metricsListen(env: { METRICS_PORT: 'off' | number; METRICS_HOST: string }): MetricsListen | undefined {
  return env.METRICS_PORT === 'off' ? undefined : { host: env.METRICS_HOST, port: env.METRICS_PORT };
}

/**
 * A plain node:http listener answering `GET /metrics` (and 404 to anything
 * else): the engine and persistence are not HTTP apps, and a scrape must not
 * go through anything that could be busy with their work.
 */
export async function serveMetrics(source: MetricsSource, listen: MetricsListen): Promise<MetricsEndpoint> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: GET /metrics\n');
      return;
    }
    source.metrics().then(
      (text) => res.writeHead(200, { 'content-type': source.contentType }).end(text),
      (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${err.message}\n`),
    );
  });
  // A scraper keeping its connection open must not hold the service's shutdown.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as { port: number };
  const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface EarlyMetricsEndpoint {
  /** Absent when the service serves no metrics. */
  readonly url?: string;
  /** What `/metrics` answers from now on (before: an empty exposition). */
  show(source: MetricsSource): void;
  close(): Promise<void>;
}

/**
 * Listens before the service starts, so a taken port stops it before it takes
 * any work; `/metrics` is empty until `show` hands it the service's registry.
 */
export async function listenForMetrics(listen: MetricsListen | undefined): Promise<EarlyMetricsEndpoint> {
  let source: MetricsSource | undefined;
  const forwarded: MetricsSource = {
    get contentType() {
      return source?.contentType ?? 'text/plain; version=0.0.4; charset=utf-8';
    },
    metrics: async () => (source ? source.metrics() : ''),
  };
  const endpoint = listen && (await serveMetrics(forwarded, listen));
  return {
    url: endpoint?.url,
    show: (s) => (source = s),
    close: async () => endpoint?.close(),
  };
}
