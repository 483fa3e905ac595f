import { subjects } from '@steerline/contracts';
import { republishesStored, streamConfig } from './nats';

describe('the subjects gateways follow and live output travels on', () => {
  // NATS subject matching: `*` one token, `>` the rest.
  const matches = (pattern: string, subject: string) => {
    const p = pattern.split('.');
    const s = subject.split('.');
    for (let i = 0; i < p.length; i++) {
      if (p[i] === '>') return s.length > i;
      if (p[i] !== '*' && p[i] !== s[i]) return false;
    }
    return p.length === s.length;
  };

  it('never overlap the event stream’s subjects, so the stream stores neither republished events nor live output', () => {
    const s = subjects('steerline');
    for (const subject of [s.conversationStored('t', 'c'), s.conversationLive('t', 'c'), s.stored.replace('>', 'x.y')]) {
      expect(streamConfig(s).subjects!.some((pattern: string) => matches(pattern, subject))).toBe(false);
    }
    expect(matches(s.events, s.conversationEvents('t', 'c'))).toBe(true);
    expect(streamConfig(s).republish).toEqual({ src: s.events, dest: s.stored });
    expect(republishesStored(streamConfig(s), s)).toBe(true);
  });
});
