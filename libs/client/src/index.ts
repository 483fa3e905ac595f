export { SteerlineClient, type ClientOptions } from './client';
export { SteerlineClientError } from './errors';
export { readSse, type SseMessage } from './sse';
export type * from './types';
