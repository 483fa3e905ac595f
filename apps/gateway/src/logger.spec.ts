import { nestLogger } from '@steerline/runtime';
import { gatewayLogger, jsonLogger } from './logger';

/** A destination that records each line pino writes, parsed. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  return { lines, destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } };
}

describe('the gateway’s JSON log (pino)', () => {
  it('writes one JSON object per line: the text under message, the fields at the top level, the level by name', () => {
    const { lines, destination } = capture();
    const logger = gatewayLogger(undefined, destination);
    logger.info({ context: 'http', route: '/v1/x', status: 202 }, 'request');
    expect(lines).toEqual([expect.objectContaining({ level: 'info', message: 'request', context: 'http', route: '/v1/x', status: 202, pid: process.pid, time: expect.any(Number) })]);
  });

  it('takes Nest’s logger calls, with their context and fields, and an object message’s msg as its text', () => {
    const { lines, destination } = capture();
    const nest = nestLogger(gatewayLogger(undefined, destination));
    nest.log('steer accepted', { steerId: 's1' }, 'steers');
    nest.log({ msg: 'generation created', generation: 2 }, 'ReadModels');
    nest.warn('careful', 'gateway');
    nest.error('broke', new Error('boom').stack, 'http');
    expect(lines.map(({ level, message, context }) => ({ level, message, context }))).toEqual([
      { level: 'info', message: 'steer accepted', context: 'steers' },
      { level: 'info', message: 'generation created', context: 'ReadModels' },
      { level: 'warn', message: 'careful', context: 'gateway' },
      { level: 'error', message: 'broke', context: 'http' },
    ]);
    expect(lines[0]).toMatchObject({ steerId: 's1' });
    expect(lines[1]).toMatchObject({ generation: 2 });
    expect(lines[3].stack).toMatch(/^Error: boom/);
  });

  it('writes Nest’s debug and verbose lines, fields and all, only at a level that has them', () => {
    const at = (level: string) => {
      const { lines, destination } = capture();
      const nest = nestLogger(gatewayLogger(level, destination));
      nest.debug!('steer answered', { steerId: 's1' }, 'steers');
      nest.debug!({ msg: 'detail', generation: 2 }, 'ReadModels');
      nest.verbose!('chatter', 'steers');
      return lines.map(({ level: l, message, context, steerId, generation }) => ({ l, message, context, ...(steerId ? { steerId } : {}), ...(generation ? { generation } : {}) }));
    };
    expect(at('log')).toEqual([]);
    expect(at('debug')).toEqual([
      { l: 'debug', message: 'steer answered', context: 'steers', steerId: 's1' },
      { l: 'debug', message: 'detail', context: 'ReadModels', generation: 2 },
    ]);
    expect(at('verbose').map((l) => l.message)).toEqual(['steer answered', 'detail', 'chatter']);
  });

  it('honours STEERLINE_LOG_LEVEL: warn drops the routine lines, and a bad level is refused', () => {
    const { lines, destination } = capture();
    const quiet = gatewayLogger('warn', destination);
    quiet.info({ route: '/v1/x' }, 'request');
    quiet.warn('kept');
    expect(lines.map((l) => l.message)).toEqual(['kept']);
    const errorsOnly = jsonLogger(['error', 'fatal'], destination);
    errorsOnly.warn('dropped');
    expect(errorsOnly.level).toBe('error');
    expect(() => gatewayLogger('chatty')).toThrow(/STEERLINE_LOG_LEVEL must be one of error, warn, log, debug, verbose/);
  });
});
