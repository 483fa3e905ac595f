// What drive-start.mjs looks at: a steer driven to delivery over HTTP, and
// whether anything of a checkout is left (processes, listening ports).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { checkoutHome } from '../../../scripts/lib/pg-place.mjs';

export async function until(check, timeoutMs, what, lines = []) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last output:\n${lines.slice(-15).join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One turn whose tool sleeps 3 s, one steer during it, waited on until its receipt: `{status, body}`. */
export async function drive(url) {
  const api = async (method, route, body, headers = {}) => {
    const response = await fetch(`${url}/v1${route}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body && JSON.stringify(body) });
    return { status: response.status, body: await response.json() };
  };
  const cid = (await api('POST', '/conversations', {})).body.id;
  const script = [{ tool: { name: 'sleep', args: { ms: 3000 } } }, { text: 'done' }];
  const turn = await api('POST', `/conversations/${cid}/turns`, { prompt: 'hi', model: { provider: 'scripted', script } });
  return api('POST', `/turns/${turn.body.turnId}/steers`, { text: 'keep it short' }, { Prefer: 'wait=15' });
}

/** TCP ports something listens on in this namespace (/proc/net/tcp{,6}, state 0A). */
function listeningPorts() {
  const ports = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const row of readFileSync(table, 'utf8').trim().split('\n').slice(1)) {
      const [, local, , state] = row.trim().split(/\s+/);
      if (state === '0A') ports.push(parseInt(local.split(':').at(-1), 16));
    }
  }
  return ports;
}

/** Processes whose command line names the checkout, or (root's embedded PostgreSQL) its folder under /var/lib/steerline. */
export function processesOf(checkout) {
  const patterns = [checkout];
  try {
    patterns.push(checkoutHome(checkout));
  } catch {
    // not a folder (any more): its name alone
  }
  return patterns.flatMap((pattern) => {
    try {
      return execFileSync('pgrep', ['-af', pattern], { encoding: 'utf8' }).trim().split('\n');
    } catch {
      return []; // pgrep exits 1 when it finds nothing
    }
  });
}

/** Waits until no process names `checkout` and no port listens; resolves with what is still there after `timeoutMs`. */
export async function leftovers(checkout, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = { processes: processesOf(checkout), ports: listeningPorts() };
    if ((left.processes.length === 0 && left.ports.length === 0) || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
