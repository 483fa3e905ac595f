// Where `npm start` tells the engine and persistence to serve /metrics. The
// apps' own defaults (libs/runtime METRICS_PORTS) differ, so one machine runs
// both; a METRICS_PORT given to `npm start` is the engine's and the next port
// persistence's, `0` gives each a free port and `off` turns both off. The
// gateway serves its /metrics on its own PORT.
import { isListening, probeHost } from './probe.mjs';
import { UserError } from './output.mjs';

export const METRICS_DEFAULTS = { engine: 9101, persistence: 9102 };

/** { engine, persistence }: each app's METRICS_PORT, as a string. */
export function metricsPorts(env) {
  const given = (env.METRICS_PORT ?? '').trim();
  if (!given) return { engine: String(METRICS_DEFAULTS.engine), persistence: String(METRICS_DEFAULTS.persistence) };
  if (given === 'off' || given === '0') return { engine: given, persistence: given };
  const port = Number(given);
  if (!Number.isInteger(port) || port < 1 || port > 65_534) {
    throw new UserError(`METRICS_PORT must be a port (the engine's; persistence takes the next one), 0 or off, got "${given}".`);
  }
  return { engine: String(port), persistence: String(port + 1) };
}

/** A busy metrics port would crash-loop its app after it started: refuse before starting anything. */
export async function refuseBusyMetricsPorts(env, ports) {
  const host = probeHost(env.METRICS_HOST || '127.0.0.1');
  for (const [app, port] of Object.entries(ports)) {
    if (port === 'off' || port === '0') continue;
    if (await isListening(host, Number(port))) {
      throw new UserError(`Something already listens on ${host}:${port}, the ${app}'s metrics port (another npm start?). Stop it, or set METRICS_PORT (0: free ports, off: none).`);
    }
  }
}

/** The lines `npm start` prints once everything is ready. */
export function metricsLines(env, ports, gatewayUrl) {
  const host = env.METRICS_HOST || '127.0.0.1';
  const where = (port) => (port === 'off' ? 'off' : port === '0' ? 'on a free port (its log line "… metrics at" says which)' : `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`);
  return [
    `Metrics: gateway     ${gatewayUrl.replace(/\/+$/, '')}/metrics`,
    `         engine      ${where(ports.engine)}`,
    `         persistence ${where(ports.persistence)}`,
  ].join('\n');
}
