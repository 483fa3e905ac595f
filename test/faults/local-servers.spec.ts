import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

// Where nothing listens (a fresh network namespace), `npm start` and `npm test`
// bring their own nats-server and embedded PostgreSQL, and stop them again on
// every way out. Network and mount namespaces need root (or CAP_SYS_ADMIN), as
// CI runs; the scenarios themselves live in test/support/netns/drive-start.mjs.
const ROOT = join(__dirname, '../..');

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    // 'exit' may come before the last output is read: wait for the pipes to end too, but not for a process left holding them.
    child.once('exit', (code) => {
      const ended = [child.stdout, child.stderr].map((s) => new Promise((r) => (s.readableEnded ? r(undefined) : s.once('end', r))));
      const timer = setTimeout(() => resolve({ code, out }), 5_000);
      void Promise.all(ended).then(() => (clearTimeout(timer), resolve({ code, out })));
    });
  });
}

/** The namespaces this machine refused, with why: said in one line once the suites are declared. */
const refused: string[] = [];

/**
 * `describe`, or `describe.skip` where this machine does not let the tests make
 * the namespaces they need: tried (`unshare <flags> true`), not guessed from the
 * uid. Where it is allowed (CI, as root) they run.
 */
function describeWhereAllowed(flags: string[]): typeof describe {
  const probe = spawnSync('unshare', [...flags, 'true'], { encoding: 'utf8' });
  if (probe.status === 0) return describe;
  refused.push(`\`unshare ${flags.join(' ')}\` (${(probe.error?.message ?? probe.stderr).trim().split('\n')[0]})`);
  return describe.skip;
}

interface Left {
  processes: string[];
  ports: number[];
}
const nothingLeft: Left = { processes: [], ports: [] };

describeWhereAllowed(['-m', '-n'])('npm start where nothing listens: from a private clone, and stopping what it started on every way out', () => {
  let scenarios: Record<string, Record<string, unknown>>;
  let out: string;

  beforeAll(async () => {
    const result = await run('unshare', ['-m', '-n', '--fork', process.execPath, join(ROOT, 'test/support/netns/drive-start.mjs'), ROOT]);
    out = result.out;
    scenarios = Object.fromEntries(
      out
        .split('\n')
        .filter((line) => line.startsWith('{"scenario"'))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .map((facts) => [facts.scenario as string, facts]),
    );
  }, 150_000);

  it('Ctrl-C while initdb runs: exits 0, and no process of the checkout and no listening port is left', () => {
    const facts = scenarios['interrupt-start'];
    expect(facts).toBeDefined();
    expect(facts.exit).toEqual({ code: 0, signal: null });
    expect(facts.lines).toEqual(expect.arrayContaining([expect.stringContaining('initdb stopped'), expect.stringContaining('nats-server stopped')]));
    expect(facts.left).toEqual(nothingLeft);
  });

  it('as root from a mode-700 clone: a steer is delivered; SIGKILL of the supervisor and its watchdog stops the apps, the servers stay', () => {
    const facts = scenarios['steer-then-kill-all'];
    expect(facts?.steer).toMatchObject({ status: 200, body: { status: 'delivered', step: 1, boundary: 'tool_results' } });
    const left = facts.left as Left;
    expect(left.processes).toEqual([expect.stringContaining('nats-server'), expect.stringContaining('bin/postgres')]);
    expect(left.ports).toContain(4222);
  });

  it('the next start adopts the servers left behind and says so; SIGKILL of its supervisor then leaves nothing', () => {
    const facts = scenarios['reuse-then-kill'];
    expect(facts?.lines).toEqual(
      expect.arrayContaining([expect.stringMatching(/using the nats-server an earlier run left running .*it stops with this run/), expect.stringMatching(/using the embedded PostgreSQL an earlier run left running .*it stops with this run/)]),
    );
    expect(facts.left).toEqual(nothingLeft);
  });

  it('a start that fails at the database step stops its nats-server and ends with one line naming cause and way out', () => {
    const facts = scenarios['db-step-fails'];
    expect(facts?.exit).toEqual({ code: 1, signal: null });
    expect(facts.lastLine).toMatch(/The embedded PostgreSQL did not start: postgres exited \(code 1\): .*FATAL.*set DATABASE_URL/);
    expect(facts.lines).toEqual(expect.arrayContaining([expect.stringContaining('nats-server stopped')]));
    expect(JSON.stringify(facts.lines)).not.toMatch(/EACCES|\n\s+at /);
    expect(facts.left).toEqual(nothingLeft);
  });

  it('as a user who is not root, from its own mode-700 clone: a steer is delivered; Ctrl-C stops everything', () => {
    const facts = scenarios['non-root'];
    expect(facts?.steer).toMatchObject({ status: 200, body: { status: 'delivered' } });
    expect(facts.exit).toEqual({ code: 0, signal: null });
    expect(facts.home).toEqual(expect.arrayContaining(['pg', 'pg.password', 'nats']));
    expect(facts.left).toEqual(nothingLeft);
  });

  it('the test run’s own servers stop, and their folder goes, when the test run is SIGKILLed', () => {
    const facts = scenarios['test-run-killed'];
    expect(facts?.urls).toMatch(/^URLS nats:\/\/127\.0\.0\.1:\d+ postgres:\/\/postgres:\S+@127\.0\.0\.1:\d+$/);
    expect(facts.folderLeft).toBe(false);
    expect(facts.left).toEqual(nothingLeft);
  });

  it('without nats-server installed, the test run stops with one line saying what to install', () => {
    const facts = scenarios['no-nats-server'];
    expect(facts?.code).toBe(1);
    expect(facts.lines).toEqual([expect.stringMatching(/^Nothing answers at NATS_URL \(nats:\/\/127\.0\.0\.1:4222\) and nats-server is not installed\. Install it \(Debian\/Ubuntu: `apt-get install nats-server`/)]);
    expect(facts.left).toEqual(nothingLeft);
  });

  afterAll(() => {
    if (Object.keys(scenarios ?? {}).length < 7) process.stderr.write(`drive-start.mjs output:\n${out}\n`);
  });
});

describeWhereAllowed(['-n'])('npm test where nothing listens', () => {
  it('starts a nats-server and an embedded PostgreSQL for every suite, passes, and stops them at the end', async () => {
    // A representative part of the suite: a unit spec on NATS, an engine spec, and a whole stack with PostgreSQL.
    const specs = ['apps/gateway/src/steers/receipt-waiter.spec.ts', 'test/e2e/engine.spec.ts', 'test/e2e/walking-skeleton.spec.ts'];
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !['NATS_URL', 'TEST_PG_URL', 'DATABASE_URL', 'JEST_WORKER_ID'].includes(name)));
    const jest = join(ROOT, 'node_modules/jest/bin/jest.js');
    const script = `ip link set lo up && exec "${process.execPath}" "${jest}" --runInBand ${specs.join(' ')}`;
    const { code, out } = await run('unshare', ['-n', 'sh', '-c', script], env);
    expect({ code, out }).toMatchObject({ code: 0 });
    expect(out).toMatch(/started nats-server \(pid \d+\) at 127\.0\.0\.1:\d+/);
    expect(out).toMatch(/started embedded PostgreSQL \(pid \d+\)/);
    expect(out).toMatch(/Tests:\s+\d+ passed, \d+ total/);

    // Stopped, and their temporary folder removed.
    const folder = /data in (\/\S+steerline-test-\w+)\/nats/.exec(out)![1];
    expect(() => execFileSync('pgrep', ['-f', folder])).toThrow();
    expect(() => execFileSync('test', ['-e', folder])).toThrow();
  }, 120_000);
});

if (refused.length) {
  process.stderr.write(`test/faults/local-servers.spec.ts skipped: this machine does not allow ${refused.join(' or ')}; it needs root or CAP_SYS_ADMIN, as CI has\n`);
}
