/**
 * `npm run audit [-- --conversation <id> --tenant <id> --settled]`: reads the
 * event stream and reports every violation of I1–I6 with its turn, steer and
 * stream sequence. Exit code 1 when there is any. Streams the log past the
 * checker (memory grows with turns, not events) and shows its progress: a bar
 * in a terminal, a line every few seconds otherwise (on stderr with --json).
 */
import { parseArgs } from 'node:util';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { subjects } from '@steerline/contracts';
import { auditLog, connectNats } from '@steerline/runtime';
import { Progress } from './lib/progress';

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      conversation: { type: 'string' },
      tenant: { type: 'string', default: 'default' },
      prefix: { type: 'string', default: process.env.STEERLINE_PREFIX ?? 'steerline' },
      settled: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const nc = await connectNats(process.env.NATS_URL ?? 'nats://127.0.0.1:4222', 'steerline-audit');
  try {
    const s = subjects(values.prefix);
    const progress = new Progress({ label: 'audit', stream: values.json ? process.stderr : process.stdout });
    const report = await auditLog(jetstream(nc), await jetstreamManager(nc), s, {
      tenantId: values.tenant,
      conversationId: values.conversation,
      requireSettled: values.settled,
      onProgress: (seq, last) => progress.update(seq, last),
    });
    progress.stop();
    if (values.json) console.log(JSON.stringify(report, null, 2));
    else {
      for (const v of report.violations) {
        console.log(`${v.invariant}  stream seq ${v.streamSeq ?? '-'}  turn ${v.turnId ?? '-'}  steer ${v.steerId ?? '-'}  ${v.message}`);
      }
      console.log(`audited ${report.events} events, ${report.turns} turns, ${report.steers} steers in ${s.stream}: ${report.violations.length} violation(s)`);
    }
    return report.violations.length ? 1 : 0;
  } finally {
    await nc.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`audit failed: ${(err as Error).message}`);
    process.exit(2);
  },
);
