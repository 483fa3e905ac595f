// Prefixed, line-oriented output for the supervisor and the processes it runs,
// in the style of docker compose: `engine      | {"level":"info",...}`.
const useColor = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;
const palette = [36, 35, 33, 32, 34, 31];
const SELF = 'steerline';

// A closed terminal or a downstream pipe that went away (`npm start | head`)
// must not crash the supervisor and orphan what it runs; its output is lost
// either way, and the supervising goes on.
process.stdout.on('error', () => {});
process.stderr.on('error', () => {});

export function createOutput(names) {
  const width = Math.max(SELF.length, ...names.map((name) => name.length));
  const colorOf = new Map([[SELF, 1], ...names.map((name, i) => [name, palette[i % palette.length]])]);
  const prefix = (name) => {
    const label = `${name.padEnd(width)} |`;
    return useColor ? `\x1b[${colorOf.get(name) ?? 0}m${label}\x1b[0m ` : `${label} `;
  };
  return {
    /** One line of a managed process's output. */
    line(name, text, stream = 'stdout') {
      (stream === 'stderr' ? process.stderr : process.stdout).write(prefix(name) + text + '\n');
    },
    log(message) {
      process.stdout.write(prefix(SELF) + message + '\n');
    },
    error(message) {
      process.stderr.write(prefix(SELF) + message + '\n');
    },
  };
}

/** An error whose message is the whole story for the user: printed without a stack. */
export class UserError extends Error {}
