import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const LOGGING = join(__dirname, '../../dist/libs/runtime/src/logging.js');

/** Runs a few lines of Node against the built logging module, stdout a pipe as under npm start or a collector. */
function run(script: string, env: Record<string, string> = {}) {
  if (!existsSync(LOGGING)) throw new Error(`${LOGGING} is missing: run \`npm run build\` (npm test does)`);
  const child = spawnSync(process.execPath, ['-e', `const { createLogger, logLevelFor } = require(${JSON.stringify(LOGGING)});\n${script}`], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  return { status: child.status, lines: child.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('the apps’ log on a pipe (pino, asynchronous destination)', () => {
  it('writes every line, in order, though the process exits right after logging them', () => {
    const { status, lines } = run(`
      const log = createLogger();
      for (let i = 0; i < 5000; i++) log.info({ context: 'http', n: i }, 'request');
      log.warn({ context: 'gateway' }, 'last words');
      process.exit(3);
    `);
    expect(status).toBe(3);
    expect(lines).toHaveLength(5001);
    expect(lines.slice(0, 5000).every((l, i) => l.n === i && l.message === 'request' && l.level === 'info')).toBe(true);
    expect(lines[5000]).toMatchObject({ level: 'warn', message: 'last words', context: 'gateway' });
  });

  it('writes nothing below STEERLINE_LOG_LEVEL', () => {
    const { lines } = run(`
      const log = createLogger({ level: logLevelFor(process.env.STEERLINE_LOG_LEVEL) });
      log.info('routine');
      log.warn('kept');
    `, { STEERLINE_LOG_LEVEL: 'warn' });
    expect(lines.map((l) => l.message)).toEqual(['kept']);
  });
});
