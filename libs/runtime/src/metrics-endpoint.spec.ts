import { listenForMetrics, serveMetrics } from './metrics-endpoint';

const source = (text: string) => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', metrics: async () => text });

describe('the /metrics listener of the engine and persistence', () => {
  it('answers GET /metrics with the source’s exposition and anything else 404, on the free port it took', async () => {
    const endpoint = await serveMetrics(source('steerline_x_total 3\n'), { host: '127.0.0.1', port: 0 });
    try {
      expect(endpoint.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      expect(endpoint.url).not.toContain(':0/');
      const res = await fetch(endpoint.url);
      expect([res.status, res.headers.get('content-type'), await res.text()]).toEqual([200, 'text/plain; version=0.0.4; charset=utf-8', 'steerline_x_total 3\n']);
      expect((await fetch(endpoint.url.replace('/metrics', '/healthz'))).status).toBe(404);
      expect((await fetch(endpoint.url, { method: 'POST' })).status).toBe(404);
    } finally {
      await endpoint.close();
    }
  });

  it('listens before the service has metrics (empty until shown), and refuses a port already taken', async () => {
    const early = await listenForMetrics({ host: '127.0.0.1', port: 0 });
    try {
      expect(await (await fetch(early.url!)).text()).toBe('');
      early.show(source('steerline_y 1\n'));
      expect(await (await fetch(early.url!)).text()).toBe('steerline_y 1\n');
      const port = Number(new URL(early.url!).port);
      await expect(serveMetrics(source(''), { host: '127.0.0.1', port })).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await early.close();
    }
    const off = await listenForMetrics(undefined);
    expect(off.url).toBeUndefined();
    await off.close();
  });
});
