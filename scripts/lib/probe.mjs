// Cheap "is something there?" checks over plain TCP, no client libraries.
import net from 'node:net';

/**
 * Connects to host:port and hands the socket to `talk`, which resolves with a
 * result or null; null as well when nothing answers within `timeoutMs`.
 */
function probe(host, port, timeoutMs, talk) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (result) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done(null), timeoutMs);
    socket.once('error', () => done(null));
    socket.once('connect', () => talk(socket, done));
  });
}

/** Where to probe a server told to listen on `host`: a wildcard address on loopback, an IPv6 one without brackets. */
export function probeHost(host) {
  return ['0.0.0.0', '::', '[::]'].includes(host) ? '127.0.0.1' : host.replace(/^\[|\]$/g, '');
}

/** True when something accepts a TCP connection at host:port. */
export async function isListening(host, port, timeoutMs = 1_000) {
  return (await probe(host, port, timeoutMs, (_socket, done) => done(true))) === true;
}

/**
 * A NATS server speaks first: `INFO {json}\r\n`. Resolves with that JSON (it
 * says whether JetStream is on), or null when nothing NATS-like answers.
 */
export function probeNats(host, port, timeoutMs = 1_500) {
  return probe(host, port, timeoutMs, (socket, done) => {
    let buffer = '';
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      const end = buffer.indexOf('\r\n');
      if (end === -1) return;
      const line = buffer.slice(0, end);
      if (!line.startsWith('INFO ')) return done(null);
      try {
        done(JSON.parse(line.slice(5)));
      } catch {
        done({});
      }
    });
  });
}

/**
 * Sends PostgreSQL's SSLRequest; a server answers with one byte, 'S' or 'N'.
 * True when a PostgreSQL server listens at host:port.
 */
export async function probePostgres(host, port, timeoutMs = 1_500) {
  const answer = await probe(host, port, timeoutMs, (socket, done) => {
    socket.once('data', (chunk) => done(String.fromCharCode(chunk[0])));
    socket.write(Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]));
  });
  return answer === 'S' || answer === 'N';
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}
