import { ConfigError, loadGatewayConfig } from './config';
import { defaultConsoleDir } from './console/console-assets';

describe('gateway configuration', () => {
  it('defaults to local NATS, prefix steerline, 127.0.0.1:3000 and an open API', () => {
    expect(loadGatewayConfig({})).toEqual({
      natsUrl: 'nats://127.0.0.1:4222',
      prefix: 'steerline',
      host: '127.0.0.1',
      port: 3000,
      apiKeys: undefined,
      rateLimit: { perSecond: 100, burst: 200, storeTimeoutMs: 250, storeReplicas: 1 },
      sseHeartbeatMs: 15_000,
      consoleDir: defaultConsoleDir(),
      sseMaxStreams: 20_000,
      sseMaxStreamsPerKey: 1_000,
      sseBufferBytes: 262_144,
      streamReplicas: 1,
    });
  });

  it('serves the console from STEERLINE_CONSOLE_DIR when set, else from the checkout’s dist/console', () => {
    expect(loadGatewayConfig({ STEERLINE_CONSOLE_DIR: '/srv/console' }).consoleDir).toBe('/srv/console');
    expect(defaultConsoleDir('/')).toBeUndefined();
  });

  it('reads the rate limit, its burst and the shared store’s timeout, and turns the limit off at 0', () => {
    expect(loadGatewayConfig({ STEERLINE_RATE_LIMIT: '2', STEERLINE_RATE_BURST: '5', STEERLINE_RATE_LIMIT_TIMEOUT_MS: '50', STEERLINE_STREAM_REPLICAS: '3' }).rateLimit).toEqual({ perSecond: 2, burst: 5, storeTimeoutMs: 50, storeReplicas: 3 });
    expect(loadGatewayConfig({ STEERLINE_RATE_LIMIT: '0.5' }).rateLimit).toEqual({ perSecond: 0.5, burst: 1, storeTimeoutMs: 250, storeReplicas: 1 });
    expect(loadGatewayConfig({ STEERLINE_RATE_LIMIT: '0' }).rateLimit).toBeUndefined();
  });

  it('reads the engines’ subject partitions, to find a conversation’s newer events', () => {
    expect(loadGatewayConfig({ STEERLINE_SUBJECT_PARTITIONS: '4' }).subjectPartitions).toBe(4);
    expect(loadGatewayConfig({ STEERLINE_SUBJECT_PARTITIONS: '1' }).subjectPartitions).toBeUndefined();
    expect(() => loadGatewayConfig({ STEERLINE_SUBJECT_PARTITIONS: '65' })).toThrow(/STEERLINE_SUBJECT_PARTITIONS/);
  });

  it('maps each API key to its tenant', () => {
    const { apiKeys } = loadGatewayConfig({ STEERLINE_API_KEYS: 'k1:acme, k:with:colons:globex' });
    expect(apiKeys).toEqual(new Map([['k1', 'acme'], ['k:with:colons', 'globex']]));
  });

  it.each([
    ['PORT', { PORT: '70000' }],
    ['PORT', { PORT: 'http' }],
    ['STEERLINE_PREFIX', { STEERLINE_PREFIX: 'a.b' }],
    ['NATS_URL', { NATS_URL: 'localhost' }],
    ['STEERLINE_API_KEYS', { STEERLINE_API_KEYS: 'justakey' }],
    ['STEERLINE_API_KEYS', { STEERLINE_API_KEYS: 'k:bad tenant' }],
    ['STEERLINE_API_KEYS', { STEERLINE_API_KEYS: 'k:acme,k:globex' }],
    ['STEERLINE_API_KEYS', { STEERLINE_API_KEYS: ' ' }],
    ['STEERLINE_RATE_LIMIT', { STEERLINE_RATE_LIMIT: '-1' }],
    ['STEERLINE_RATE_LIMIT_TIMEOUT_MS', { STEERLINE_RATE_LIMIT_TIMEOUT_MS: '5' }],
    ['STEERLINE_STREAM_REPLICAS', { STEERLINE_STREAM_REPLICAS: '7' }],
    ['STEERLINE_RATE_BURST', { STEERLINE_RATE_BURST: '0' }],
    ['STEERLINE_SSE_HEARTBEAT_MS', { STEERLINE_SSE_HEARTBEAT_MS: '5' }],
    ['STEERLINE_SSE_MAX_STREAMS', { STEERLINE_SSE_MAX_STREAMS: '0' }],
    ['STEERLINE_SSE_MAX_STREAMS_PER_KEY', { STEERLINE_SSE_MAX_STREAMS_PER_KEY: '1.5' }],
    ['STEERLINE_SSE_BUFFER_BYTES', { STEERLINE_SSE_BUFFER_BYTES: '10' }],
  ])('refuses to start on a bad %s (%j) and names it', (name, env) => {
    expect(() => loadGatewayConfig(env)).toThrow(ConfigError);
    expect(() => loadGatewayConfig(env)).toThrow(name);
  });
});
