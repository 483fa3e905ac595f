import { loadEngineConfig } from './config';
import { installProcessGuard } from '@steerline/contracts';
import { startEngine } from './app';

installProcessGuard('engine');

async function main(): Promise<void> {
  const engine = await startEngine(loadEngineConfig(process.env));
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    console.log(JSON.stringify({ level: 'log', context: 'Engine', message: `engine stopping on ${signal}` }));
    engine.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err) => {
  console.error(JSON.stringify({ level: 'error', context: 'Engine', message: `engine failed to start: ${(err as Error).message}` }));
  process.exit(1);
});
