import { databaseName, loadPersistenceConfig } from './config';

describe('persistence configuration', () => {
  it('defaults to local NATS and PostgreSQL, prefix steerline, and a one-replica stream', () => {
    expect(loadPersistenceConfig({})).toEqual({
      natsUrl: 'nats://127.0.0.1:4222',
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/steerline',
      prefix: 'steerline',
      streamReplicas: 1,
      partitions: 1,
      subjectPartitions: 1,
      metrics: { host: '127.0.0.1', port: 9102 },
    });
  });

  it('reads the partitions a new read-model generation is projected in', () => {
    expect(loadPersistenceConfig({ STEERLINE_PARTITIONS: '8' }).partitions).toBe(8);
    expect(loadPersistenceConfig({ STEERLINE_PARTITIONS: '' }).partitions).toBe(1);
  });

  it('reads the subject partitions the engines write, as the engine does', () => {
    expect(loadPersistenceConfig({ STEERLINE_SUBJECT_PARTITIONS: '4' }).subjectPartitions).toBe(4);
    expect(loadPersistenceConfig({ STEERLINE_SUBJECT_PARTITIONS: '' }).subjectPartitions).toBe(1);
  });

  it('serves /metrics on METRICS_PORT (0: a free port), or nowhere with off', () => {
    expect(loadPersistenceConfig({ METRICS_PORT: '0', METRICS_HOST: '0.0.0.0' }).metrics).toEqual({ host: '0.0.0.0', port: 0 });
    expect(loadPersistenceConfig({ METRICS_PORT: 'off' }).metrics).toBeUndefined();
    expect(() => loadPersistenceConfig({ METRICS_PORT: '70000' })).toThrow(/invalid persistence configuration: METRICS_PORT/);
  });

  it('reads the stream’s replicas, as the engine does, so whichever starts first creates the same stream', () => {
    expect(loadPersistenceConfig({ STEERLINE_STREAM_REPLICAS: '3' }).streamReplicas).toBe(3);
    expect(loadPersistenceConfig({ STEERLINE_STREAM_REPLICAS: '' }).streamReplicas).toBe(1);
  });

  it.each([
    ['STEERLINE_STREAM_REPLICAS', { STEERLINE_STREAM_REPLICAS: '0' }],
    ['STEERLINE_STREAM_REPLICAS', { STEERLINE_STREAM_REPLICAS: 'three' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://localhost/x' }],
    ['DATABASE_URL', { DATABASE_URL: 'postgres://localhost:5432' }],
    ['NATS_URL', { NATS_URL: 'http://x y' }],
    ['STEERLINE_PREFIX', { STEERLINE_PREFIX: 'a.b' }],
    ['STEERLINE_PARTITIONS', { STEERLINE_PARTITIONS: '0' }],
    ['STEERLINE_PARTITIONS', { STEERLINE_PARTITIONS: '65' }],
    ['STEERLINE_SUBJECT_PARTITIONS', { STEERLINE_SUBJECT_PARTITIONS: '65' }],
  ])('refuses a bad %s, naming it', (name, env) => {
    expect(() => loadPersistenceConfig(env)).toThrow(new RegExp(`invalid persistence configuration: .*${name}`));
  });

  it('names the database of a URL', () => {
    expect(databaseName('postgres://u@h:5432/my%20db?sslmode=disable')).toBe('my db');
  });
});
