import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { NatsConnection } from '@nats-io/transport-node';
import { coalesceWrites, connectNats, nestLogger, type Logger } from '@steerline/runtime';
import { AppModule } from './app.module';
import { securityHeaders } from './auth/security-headers';
import type { GatewayConfig } from './config';
import { consoleAssets } from './console/console-assets';
import { trackConnections } from './http/connections';
import { ErrorFilter } from './http/error.filter';
import { gatewayHttpAdapter, onEveryRequest, serveConsole } from './http/fastify';
import { gatewayLogger } from './logger';
import { GatewayMetrics } from './observability/metrics';
import { requestLog } from './observability/request-log';

export interface RunningGateway {
  /** The URL the listener is bound to (the real port when PORT is 0). */
  url: string;
  /**
   * Stops taking requests, answers `Prefer: wait` waiters with their current
   * receipt, ends event streams (clients resume elsewhere with Last-Event-ID),
   * lets in-flight requests finish, drains NATS.
   */
  close(): Promise<void>;
}

export interface StartOptions {
  /** Defaults to `gatewayLogger()` (level log); tests pass a quieter one. */
  logger?: Logger;
}

export async function startGateway(config: GatewayConfig, opts: StartOptions = {}): Promise<RunningGateway> {
  const logger = opts.logger ?? gatewayLogger();
  const nc = await connectNats(config.natsUrl, 'steerline-gateway');
  // One NATS write per loop turn, not per HTTP request (issue 34).
  coalesceWrites(nc);
  let app: NestFastifyApplication | undefined;
  try {
    // abortOnError false: a bootstrap failure must reject here, not exit the process under a test.
    const metrics = new GatewayMetrics();
    app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, nc, metrics), gatewayHttpAdapter(), {
      // The adapter has the gateway's own JSON parser (the contract's size limit).
      bodyParser: false,
      logger: nestLogger(logger),
      abortOnError: false,
    });
    // First, so even a request the body parser refuses is timed and logged; the console is files, not
    // API: outside Nest's routes, the auth guard and /docs (http/fastify.ts).
    onEveryRequest(app.getHttpAdapter().getInstance(), requestLog(logger, metrics), securityHeaders());
    serveConsole(app.getHttpAdapter().getInstance(), consoleAssets(config.consoleDir));
    app.useGlobalFilters(new ErrorFilter());
    const connections = trackConnections(app.getHttpServer());
    await app.listen(config.port, config.host);
    const url = await app.getUrl();
    if (!config.apiKeys && !config.apiKeysFile) {
      logger.warn({ context: 'gateway', url }, 'STEERLINE_API_KEYS is unset: the API is open to anyone who can reach it, as tenant "default"');
    }
    if (!config.rateLimit) logger.warn({ context: 'gateway', url }, 'STEERLINE_RATE_LIMIT is 0: requests are not rate limited');
    const started = app;
    let closing: Promise<void> | undefined;
    return {
      url,
      close: () => (closing ??= shutdown(started, nc, connections)),
    };
  } catch (err) {
    await app?.close().catch(() => undefined);
    await nc.close().catch(() => undefined);
    throw err;
  }
}

// Nest runs module destroy hooks (the receipt waiter lets its waits go) before
// it closes the HTTP server, which then waits for in-flight requests; NATS is
// drained last so those requests can still get their replies.
async function shutdown(app: NestFastifyApplication, nc: NatsConnection, connections: ReturnType<typeof trackConnections>): Promise<void> {
  // Connections with nothing in flight are ended as soon as they are, so the
  // HTTP server's close waits for in-flight requests only.
  const stopSweeping = connections.closeWhenIdle();
  try {
    await app.close();
  } finally {
    stopSweeping();
    if (!nc.isClosed()) await nc.drain().catch(() => nc.close());
  }
}
