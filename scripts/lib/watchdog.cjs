// The servers' guardian: a small node process that scripts/lib/servers.mjs
// starts next to whoever starts nats-server or the embedded PostgreSQL (the
// `npm start` supervisor, the test run). Unlike the apps, those servers are
// not node and cannot watch their parent (exit-with-parent.cjs), so this does
// it for them: the IPC channel to its parent closes when the parent is gone,
// however it went (SIGKILL included). It then stops every server still
// registered, SIGKILLs what has not stopped after 20 s, removes the folders it
// was given, and exits. A parent that stopped its servers itself has
// unregistered them, so this then only exits.
//
// Messages from the parent: {add: {pid, name, signal, startTime}},
// {remove: pid}, {cleanup: path}.
'use strict';
const { readFileSync, rmSync } = require('node:fs');

const KILL_AFTER_MS = 20_000;

/** Field 22 of /proc/<pid>/stat: tells a server from a later process that reuses its pid. */
function startTimeOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

const stillOurs = ({ pid, startTime }) => startTime !== null && startTimeOf(pid) === startTime;

function signalGroup(pid, signal) {
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, signal);
      return;
    } catch {
      // no such group (or process): try the process alone, then give up
    }
  }
}

function watch() {
  const targets = new Map();
  const cleanups = new Set();
  // It runs in its own session; a stray terminal signal must not end it before its parent.
  for (const signal of ['SIGINT', 'SIGHUP', 'SIGTERM']) process.on(signal, () => {});

  process.on('message', (message) => {
    if (message?.add) targets.set(message.add.pid, message.add);
    if (message?.remove) targets.delete(message.remove);
    if (message?.cleanup) cleanups.add(message.cleanup);
  });

  process.on('disconnect', () => {
    const left = [...targets.values()].filter(stillOurs);
    for (const target of left) signalGroup(target.pid, target.signal);
    const started = Date.now();
    const check = setInterval(() => {
      const running = left.filter(stillOurs);
      if (running.length && Date.now() - started < KILL_AFTER_MS) return;
      for (const target of running) signalGroup(target.pid, 'SIGKILL');
      clearInterval(check);
      setTimeout(() => finish(cleanups), running.length ? 500 : 0);
    }, 100);
  });
}

function finish(cleanups) {
  for (const folder of cleanups) {
    try {
      rmSync(folder, { recursive: true, force: true });
    } catch {
      // best effort: a folder still in use stays
    }
  }
  process.exit(0);
}

if (require.main === module) watch();
module.exports = { startTimeOf, signalGroup };
