import { jsonLogger, logLevelsFor } from './logger';

/** Records what reaches the process's streams, one entry per write call. */
function captureWrites() {
  const writes: { stream: 'stdout' | 'stderr'; text: string }[] = [];
  const originals = { stdout: process.stdout.write, stderr: process.stderr.write };
  for (const stream of ['stdout', 'stderr'] as const) {
    process[stream].write = ((chunk: string | Uint8Array) => {
      writes.push({ stream, text: String(chunk) });
      return true;
    }) as typeof process.stdout.write;
  }
  const lines = () => writes.flatMap((w) => w.text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>));
  const restore = () => {
    process.stdout.write = originals.stdout;
    process.stderr.write = originals.stderr;
  };
  return { writes, lines, restore };
}
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the gateway’s JSON log', () => {
  let capture: ReturnType<typeof captureWrites>;
  beforeEach(() => {
    capture = captureWrites();
  });
  afterEach(() => capture.restore());

  it('writes routine lines together, shortly after, as one JSON object per line with the fields at the top level', async () => {
    const logger = jsonLogger();
    for (let i = 0; i < 20; i++) logger.log('request', { route: '/v1/x', status: 202, n: i }, 'http');
    expect(capture.writes).toEqual([]);
    await pause(100);
    expect(capture.writes).toHaveLength(1);
    expect(capture.lines().map((l) => l.n)).toEqual([...Array(20).keys()]);
    expect(capture.lines()[0]).toMatchObject({ level: 'log', message: 'request', context: 'http', route: '/v1/x', status: 202 });
  });

  it('a warning or an error is written at once, after every line before it, in order, from any logger', async () => {
    const a = jsonLogger();
    const b = jsonLogger();
    a.log('first', {}, 'x');
    b.log('second', {}, 'y');
    b.error('broke', undefined, 'y');
    expect(capture.lines().map((l) => l.message)).toEqual(['first', 'second', 'broke']);
    expect(capture.writes.map((w) => w.stream)).toEqual(['stdout', 'stderr']);
    a.warn('careful', {}, 'x');
    expect(capture.lines().map((l) => l.message)).toEqual(['first', 'second', 'broke', 'careful']);
  });

  it('honours STEERLINE_LOG_LEVEL: warn drops the routine lines, and a bad level is refused', async () => {
    const quiet = jsonLogger(logLevelsFor('warn'));
    quiet.log('request', {}, 'http');
    await pause(60);
    expect(capture.writes).toEqual([]);
    expect(() => logLevelsFor('chatty')).toThrow(/STEERLINE_LOG_LEVEL must be one of/);
  });
});
