import { createServer, type Server } from 'node:net';
import { eventually } from '../support/env';
import { npmStartSuite } from '../support/npm-start';
import { freePort } from '../support/processes';

function listen(port: number): Promise<Server | undefined> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** A free port whose next one is free too: `npm start` gives them to the engine and persistence. */
async function freePair(): Promise<number> {
  for (;;) {
    const port = await freePort();
    const next = port < 65_535 ? await listen(port + 1) : undefined;
    if (next) {
      await new Promise((r) => next.close(r));
      return port;
    }
  }
}

/** `npm start` tells each service where to serve /metrics, prints the addresses, and refuses a taken one. */
describe('npm start and the services’ metrics ports', () => {
  const suite = npmStartSuite();
  const start = (extra: Record<string, string>) => suite.run(extra);

  it('serves the engine’s /metrics on METRICS_PORT and persistence’s on the next port, and prints both with the gateway’s', async () => {
    const port = await freePair();
    const { child, lines, exited } = start({ METRICS_PORT: String(port) });
    await eventually(() => (lines.some((l) => l.includes('Steerline is ready')) ? true : undefined), 60_000, 'Steerline is ready');
    const printed = await eventually(() => {
      const at = lines.findIndex((l) => l.startsWith('Metrics:'));
      return at >= 0 && lines.length > at + 2 ? lines.slice(at, at + 3).join('\n') : undefined;
    }, 5_000, 'the metrics lines');
    expect(printed).toMatch(new RegExp(`gateway +http://127\\.0\\.0\\.1:${suite.env.PORT}/metrics`));
    expect(printed).toContain(`engine      http://127.0.0.1:${port}/metrics`);
    expect(printed).toContain(`persistence http://127.0.0.1:${port + 1}/metrics`);
    expect(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).toMatch(/^steerline_turns_live 0$/m);
    expect(await (await fetch(`http://127.0.0.1:${port + 1}/metrics`)).text()).toMatch(/^steerline_projection_lag_events \d+$/m);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('refuses to start when a metrics port is taken, saying which and what to do', async () => {
    const port = await freePair();
    const squatter = (await listen(port + 1))!;
    try {
      const { lines, exited } = start({ METRICS_PORT: String(port) });
      expect(await exited).toBe(1);
      expect(lines.join('\n')).toContain(`Something already listens on 127.0.0.1:${port + 1}, the persistence's metrics port`);
    } finally {
      await new Promise((r) => squatter.close(r));
    }
  });
});
