/** DI tokens for what the gateway gets from outside Nest: its NATS connection and subjects. */
export const NATS_CONNECTION = Symbol('NatsConnection');
export const SUBJECTS = Symbol('Subjects');

/** How long a command or query may take before the gateway answers `unavailable`. */
export const COMMAND_TIMEOUT_MS = 5_000;
export const QUERY_TIMEOUT_MS = 5_000;
