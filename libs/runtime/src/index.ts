// @steerline/runtime: what runs a Steerline process over NATS. The contracts
// themselves (schemas, events, subjects, errors, limits, invariants) are
// @steerline/contracts, which needs none of this.
export * from './nats';
export * from './nats-writes';
export * from './nats-requests';
export * from './nats-auth';
export * from './nest-envelope';
export * from './safe-send';
export * from './process-guard';
export * from './tool-service';
export * from './consumer-kit';
export * from './audit';
export * from './asyncapi';
export * from './contract-files';
export * from './logging';
export * from './metrics-endpoint';
export * from './agent-store';
