import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Keeps count of the requests each connection is serving, so a shutdown can
 * close every connection the moment it has nothing in flight. Node's own
 * `server.close()` closes idle keep-alive connections once, when it starts; a
 * connection that goes idle later, or that was opened and never sent a request
 * (clients open spare ones), would hold the close up until its timeout.
 */
export function trackConnections(server: Server): { closeWhenIdle(): () => void } {
  const active = new Map<Socket, number>();
  server.on('connection', (socket: Socket) => {
    active.set(socket, 0);
    socket.once('close', () => active.delete(socket));
  });
  server.on('request', (req, res) => {
    const socket = req.socket;
    active.set(socket, (active.get(socket) ?? 0) + 1);
    res.once('close', () => active.has(socket) && active.set(socket, Math.max(0, (active.get(socket) ?? 1) - 1)));
  });
  return {
    /** From now on, ends each connection once it serves no request; returns the function that stops this. */
    closeWhenIdle() {
      const sweep = () => {
        for (const [socket, requests] of active) if (requests === 0) socket.destroy();
      };
      sweep();
      const timer = setInterval(sweep, 50);
      return () => clearInterval(timer);
    },
  };
}
