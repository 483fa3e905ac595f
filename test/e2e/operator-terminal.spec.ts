import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { openNats, uniquePrefix, type NatsHandle } from '../support/env';
import { writeConversations } from '../../scripts/bench/log-writer';

/**
 * Issue 25: `npm run audit` in a terminal draws one progress line, redrawn in
 * place; piped, it writes plain lines only. The terminal is a real
 * pseudo-terminal (util-linux `script`).
 */
const AUDIT = join(__dirname, '../../dist/scripts/audit.js');
const run = promisify(execFile);

describe('operator tools in a terminal', () => {
  let nats: NatsHandle;
  let prefix: string;
  let written: number;
  beforeAll(async () => {
    prefix = uniquePrefix();
    nats = await openNats(prefix);
    written = await writeConversations(nats.nc, prefix, 20_000, { tenants: ['default'] });
  });
  afterAll(async () => {
    await nats?.close();
  });

  it('the audit redraws one progress line in a terminal and ends with its summary on a clean line', async () => {
    const env = { ...process.env, CI: '', TERM: 'xterm' };
    const { stdout } = await run('script', ['-qec', `${process.execPath} ${AUDIT} --prefix ${prefix} --settled`, '/dev/null'], { env, timeout: 60_000 });
    const redraws = stdout.split('\r\x1b[2K');
    expect(redraws.length).toBeGreaterThan(2);
    expect(stdout).toMatch(new RegExp(`audit [█░]{30} +\\d+%  \\d+/${written} events  \\d+/s  \\S+ left`));
    expect(stdout).not.toMatch(/\n.*events \(\d/); // no plain lines in a terminal
    expect(redraws.at(-1)).toMatch(new RegExp(`^audited ${written} events, \\d+ turns, \\d+ steers in \\S+: 0 violation\\(s\\)`));

    // Not a terminal: no control characters at all.
    const piped = await run(process.execPath, [AUDIT, '--prefix', prefix, '--settled'], { env: { ...process.env, CI: 'true' } });
    expect(piped.stdout).not.toContain('\x1b');
    expect(piped.stdout).toContain(`audited ${written} events`);
  });
});
