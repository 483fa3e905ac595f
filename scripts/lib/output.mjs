// Prefixed, line-oriented output for the supervisor and the processes it runs,
// in the style of docker compose: `engine      | {"level":"info",...}`.
// On a terminal the apps' JSON lines (pino's, piped to us) are shown by
// pino-pretty instead: `engine      | [10:02:03.120] INFO: engine ready {"engineId":…}`.
import { prettyFactory } from 'pino-pretty';

const terminal = Boolean(process.stdout.isTTY);
const useColor = terminal && !process.env.NO_COLOR;
// The same reading as libs/runtime logging.ts PRETTY_OPTIONS (this script runs without the build's output).
const pretty = terminal ? prettyFactory({ messageKey: 'message', translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true, colorize: useColor }) : undefined;

/** A JSON log line made readable on a terminal; anything else as it is. */
function readable(text) {
  if (!pretty || !text.startsWith('{')) return text;
  try {
    return pretty(JSON.parse(text)).replace(/\n$/, '');
  } catch {
    return text;
  }
}
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
      (stream === 'stderr' ? process.stderr : process.stdout).write(prefix(name) + readable(text) + '\n');
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
