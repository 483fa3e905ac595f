import { resumeAfter, sseComment, sseEvent } from './sse';

describe('Server-Sent Event framing', () => {
  it('writes the id, the event type and the data, ended by a blank line', () => {
    expect(sseEvent(42, 'SteerQueued', '{"a":1}')).toBe('id: 42\nevent: SteerQueued\ndata: {"a":1}\n\n');
  });

  it('splits data with line breaks over several data lines so no field can be injected', () => {
    expect(sseEvent(1, 'T', 'a\nid: 9\r\nb')).toBe('id: 1\nevent: T\ndata: a\ndata: id: 9\ndata: b\n\n');
    expect(sseComment('x\ny')).toBe(': x y\n\n');
  });

  it('resumes after Last-Event-ID, else after ?after=, else from the beginning', () => {
    expect(resumeAfter('17', '3')).toBe(17);
    expect(resumeAfter(undefined, '3')).toBe(3);
    expect(resumeAfter('  ', '3')).toBe(3);
    expect(resumeAfter(undefined, undefined)).toBe(0);
  });

  it.each([['-1'], ['abc'], ['1.5'], ['1e3'], ['9999999999999999']])('refuses %j as a sequence with invalid_request', (bad) => {
    expect(() => resumeAfter(bad, undefined)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
    expect(() => resumeAfter(undefined, bad)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
  });
});
