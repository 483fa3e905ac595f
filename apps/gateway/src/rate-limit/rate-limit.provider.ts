import { Logger, type Provider } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Subjects } from '@steerline/contracts';
import type { RateLimit } from '../config';
import { NATS_CONNECTION, SUBJECTS } from '../nats/nats.tokens';
import { GatewayMetrics } from '../observability/metrics';
import { BucketStore } from './bucket-store';
import { SharedRateLimiter } from './shared-rate-limiter';

/** KV values live at least this long unwritten (and always long enough to refill a whole burst). */
const MIN_TTL_MS = 60_000;

/** The per-key limiter every gateway of the deployment shares (docs/design.md §15). */
export function rateLimiterProvider(limit: RateLimit): Provider {
  return {
    provide: SharedRateLimiter,
    inject: [NATS_CONNECTION, SUBJECTS, GatewayMetrics],
    useFactory: (nc: NatsConnection, s: Subjects, metrics: GatewayMetrics) => {
      const log = new Logger('rate-limit');
      const ttlMs = Math.max(MIN_TTL_MS, Math.ceil((2 * limit.burst * 1000) / limit.perSecond));
      const store = new BucketStore(nc, s.rateLimitsBucket, ttlMs, limit.storeTimeoutMs ?? 250, limit.storeReplicas ?? 1);
      const report = { storeFailed: () => metrics.rateLimitStoreFailures.inc(), failedOpen: () => metrics.rateLimitFailedOpen.inc() };
      return new SharedRateLimiter(limit, store, report, (message, fields) => log.warn(message, fields));
    },
  };
}
