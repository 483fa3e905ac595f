import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative } from 'node:path';

/**
 * Packages as another project gets them: `npm pack` of libraries of this
 * repository, installed with `npm install` into a new project outside it.
 * What a test of an installable package needs, whatever the package:
 *
 *   const tarballs = await packLibs(['contracts', 'client']);
 *   const app = await freshProject({ tarballs, packages: ['typescript@6.0.3'], files: { 'main.ts': '…' } });
 *   const { code, stdout } = await app.run('node', ['out/main.js'], { env: { STEERLINE_URL: stack.url } });
 *   await app.remove();
 */

const ROOT = join(__dirname, '../..');
const PACK_TIMEOUT_MS = 120_000;
const INSTALL_TIMEOUT_MS = 240_000;

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
}

/**
 * Runs a command without blocking this process (the services a test runs in
 * process must go on answering meanwhile) and resolves with its exit code and
 * output. npm's own variables of an enclosing `npm test` are not passed on:
 * they would point the child's npm at this repository.
 */
export function run(command: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd, env: { ...env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      stderr += `\n[${command} ${args.join(' ')}: killed after ${opts.timeoutMs} ms]`;
    }, opts.timeoutMs ?? 60_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A run that must succeed: its output is in the error when it does not. */
async function runOrThrow(command: string, args: string[], opts: RunOptions): Promise<RunResult> {
  const result = await run(command, args, opts);
  if (result.code !== 0) {
    throw new Error(`${command} ${args.join(' ')} (in ${opts.cwd}) exited ${result.code}\n${result.stdout.slice(-4000)}\n${result.stderr.slice(-4000)}`);
  }
  return result;
}

/**
 * `npm pack` of libs/<name> for each name, in order (each package's "prepack"
 * builds it). Resolves with the tarballs' paths, in `dest` (default: a new
 * temporary folder). Packs of two test files never overlap: a build deletes
 * and rewrites libs/<name>/dist.
 */
export async function packLibs(names: string[], dest: string = mkdtempSync(join(tmpdir(), 'steerline-packs-'))): Promise<string[]> {
  return withPackLock(async () => {
    const tarballs: string[] = [];
    for (const name of names) {
      const dir = join(ROOT, 'libs', name);
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; version: string };
      await runOrThrow('npm', ['pack', '--pack-destination', dest, '--silent'], { cwd: dir, timeoutMs: PACK_TIMEOUT_MS });
      // npm's file name for a scoped package: @scope/name@1.2.3 → scope-name-1.2.3.tgz.
      const tarball = join(dest, `${manifest.name.replace(/^@/, '').replace('/', '-')}-${manifest.version}.tgz`);
      if (!existsSync(tarball)) throw new Error(`npm pack of libs/${name} wrote no ${tarball}`);
      tarballs.push(tarball);
    }
    return tarballs;
  });
}

/** One pack at a time across jest workers: a lock folder, taken from a holder that died. */
async function withPackLock<T>(fn: () => Promise<T>): Promise<T> {
  const lock = join(tmpdir(), `steerline-pack-lock-${Buffer.from(ROOT).toString('hex').slice(-24)}`);
  const deadline = Date.now() + PACK_TIMEOUT_MS * 2;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch {
      if (!holderAlive(lock)) rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`the pack lock ${lock} is still held`);
      else await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function holderAlive(lock: string): boolean {
  try {
    process.kill(Number(readFileSync(join(lock, 'pid'), 'utf8')), 0);
    return true;
  } catch (err) {
    // No pid yet (the holder is between mkdir and write): alive. No such process: dead.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface FreshProjectOptions {
  /** Tarballs to install (from `packLibs`). */
  tarballs: string[];
  /** Registry packages to install next to them, e.g. `typescript@6.0.3`. */
  packages?: string[];
  /** Files to write, by path relative to the project (package.json is written from `packageJson`). */
  files?: Record<string, string>;
  /** Merged into the project's package.json. */
  packageJson?: Record<string, unknown>;
}

export interface FreshProject {
  dir: string;
  /** Runs a command in the project folder. */
  run(command: string, args: string[], opts?: Omit<RunOptions, 'cwd'>): Promise<RunResult>;
  /** The project's installed packages, by name (`@scope/name` included). */
  installed(): string[];
  remove(): void;
}

/**
 * A new project in a temporary folder outside this repository (so that
 * nothing of the repository's node_modules can be found from it), with its own
 * package.json, and `npm install` of the tarballs and registry packages.
 */
export async function freshProject(opts: FreshProjectOptions): Promise<FreshProject> {
  const dir = mkdtempSync(join(tmpdir(), 'steerline-fresh-'));
  const rel = relative(ROOT, dir);
  if (!rel.startsWith('..') && !isAbsolute(rel)) throw new Error(`${dir} is inside the repository ${ROOT}`);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'fresh-project', version: '1.0.0', private: true, ...opts.packageJson }, null, 2) + '\n');
  for (const [file, text] of Object.entries(opts.files ?? {})) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  await runOrThrow('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--save-exact', ...opts.tarballs, ...(opts.packages ?? [])], {
    cwd: dir,
    timeoutMs: INSTALL_TIMEOUT_MS,
  });
  return {
    dir,
    run: (command, args, runOpts = {}) => run(command, args, { ...runOpts, cwd: dir }),
    installed() {
      const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
      return Object.keys(lock.packages)
        .filter((p) => p.startsWith('node_modules/'))
        .map((p) => p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length));
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
