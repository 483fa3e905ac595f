// `@steerline/runtime/nest`: the event stream as a Nest microservice transport.
// A separate entry so that services using only the consumer kit need not load @nestjs/microservices.
export * from './jetstream.context';
export * from './jetstream.server';
