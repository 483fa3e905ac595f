// Cross-service tests start real services over real NATS and PostgreSQL. Their waits for a state
// take deadlines of up to 60 s on a loaded machine, so a test's own limit is above those.
jest.setTimeout(90_000);
