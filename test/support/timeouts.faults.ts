// Fault tests start, kill and restart real processes.
jest.setTimeout(90_000);
