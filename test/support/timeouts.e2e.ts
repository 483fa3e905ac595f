// Cross-service tests start real services over real NATS and PostgreSQL.
jest.setTimeout(30_000);
