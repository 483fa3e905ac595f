// Preloaded into each app by scripts/start.mjs (`node --require`). The apps
// run in their own process groups, so when the supervisor dies without
// stopping them (kill -9, a crash) nothing would tell them; an orphaned engine
// would keep taking turns. Re-parenting is the sign: the app then gets the
// SIGTERM the supervisor would have sent, and SIGKILL if it hangs.
const parent = process.ppid;
const watch = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(watch);
  process.kill(process.pid, 'SIGTERM');
  setTimeout(() => process.kill(process.pid, 'SIGKILL'), 30_000).unref();
}, 1_000);
watch.unref();
