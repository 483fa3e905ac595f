// Jest globalTeardown: stops the servers global-setup.mjs started, if any, and removes their folder.
import { rmSync } from 'node:fs';

export default async function globalTeardown() {
  const started = globalThis.__steerlineTestServers;
  if (!started) return;
  await started.servers.stopAll();
  rmSync(started.folder, { recursive: true, force: true });
}
