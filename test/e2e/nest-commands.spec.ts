import { Inject, Injectable, Module, type DynamicModule, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientsModule, Transport, type ClientProxy } from '@nestjs/microservices';
import { firstValueFrom, timeout } from 'rxjs';
import { subjects, type ApprovalAnswer, type Receipt, type StartTurnAnswer, type Subjects } from '@steerline/contracts';
import { request } from '@steerline/runtime';
import { eventually } from '../support/env';
import { approvalRequested, startStack, type Stack } from '../support/stack';

/**
 * A Nest service sends Steerline's NATS commands the way Nest services send
 * anything: a `ClientProxy` of `@nestjs/microservices` (Transport.NATS),
 * `send(pattern, data)` with a timeout. Steerline's responders read Nest's
 * envelope and answer in Nest's shape (libs/runtime/src/nest-envelope.ts).
 */
const STEERLINE = 'STEERLINE';
const SUBJECTS = 'STEERLINE_SUBJECTS';
const TENANT = 'default';

@Injectable()
class SteerlineCommands {
  constructor(
    @Inject(STEERLINE) private readonly client: ClientProxy,
    @Inject(SUBJECTS) private readonly s: Subjects,
  ) {}

  private send<T>(subject: string, data: Record<string, unknown>): Promise<T> {
    return firstValueFrom(this.client.send<T>(subject, data).pipe(timeout(5_000)));
  }

  createConversation() {
    return this.send<{ id: string }>(this.s.createConversation, { tenantId: TENANT });
  }
  startTurn(conversationId: string, body: Record<string, unknown>) {
    return this.send<StartTurnAnswer>(this.s.startTurn, { tenantId: TENANT, conversationId, ...body });
  }
  steer(turnId: string, text: string) {
    return this.send<Receipt>(this.s.turnSteer(turnId), { tenantId: TENANT, text });
  }
  approve(turnId: string, toolCallId: string) {
    return this.send<ApprovalAnswer>(this.s.decideApproval(turnId), { tenantId: TENANT, toolCallId, decision: 'approve' });
  }
  receipt(turnId: string, steerId: string) {
    return this.send<Receipt>(this.s.querySteer, { tenantId: TENANT, turnId, steerId });
  }
}

@Module({})
class CommandsModule {
  static forStack(natsUrl: string, prefix: string): DynamicModule {
    return {
      module: CommandsModule,
      imports: [ClientsModule.register([{ name: STEERLINE, transport: Transport.NATS, options: { servers: natsUrl.split(',') } }])],
      providers: [SteerlineCommands, { provide: SUBJECTS, useValue: subjects(prefix) }],
    };
  }
}

describe('a Nest service sends commands with its own ClientProxy (Transport.NATS)', () => {
  let stack: Stack;
  let app: INestApplicationContext;
  let steerline: SteerlineCommands;

  beforeAll(async () => {
    stack = await startStack();
    app = await NestFactory.createApplicationContext(CommandsModule.forStack(stack.env.NATS_URL, stack.prefix), { logger: false });
    steerline = app.get(SteerlineCommands);
  });
  afterAll(async () => {
    await app?.close();
    await stack?.close();
  });

  it('creates a conversation, starts a turn, steers it and reads the delivered receipt', async () => {
    const { id: conversationId } = await steerline.createConversation();
    const started = await steerline.startTurn(conversationId, {
      prompt: 'work',
      // The sleep waits for approval: step 1 stays open until the steer is queued.
      model: { provider: 'scripted', script: [{ tools: [{ name: 'sleep', args: { ms: 50 } }] }, { text: 'done' }] },
      approvals: { tools: ['sleep'] },
    });
    expect(started).toMatchObject({ turnId: expect.any(String), status: 'running' });
    await approvalRequested(stack, started.turnId);

    const queued = await steerline.steer(started.turnId, 'go left');
    expect(queued).toMatchObject({ status: 'queued', position: 1, text: 'go left', turnId: started.turnId });
    expect(await steerline.approve(started.turnId, 'call_1_0')).toEqual({ toolCallId: 'call_1_0', decision: 'approved', by: 'user' });

    const receipt = await eventually(async () => {
      const r = await steerline.receipt(started.turnId, queued.steerId).catch(() => undefined);
      return r?.status === 'delivered' ? r : undefined;
    }, 20_000, 'the steer delivered in the read model');
    expect(receipt).toMatchObject({ steerId: queued.steerId, text: 'go left', status: 'delivered', step: 1, boundary: 'tool_results', requestStep: 2 });
    const delivered = await stack.turnHas(started.turnId, 'SteeringDelivered');
    expect(delivered.filter((e) => e.event.type === 'SteeringDelivered').map((e) => e.event.data)).toEqual([expect.objectContaining({ steerId: queued.steerId })]);
  });

  it('refuses bad input with Nest’s err shape, carrying the contract error code', async () => {
    const { id: conversationId } = await steerline.createConversation();
    const refused = await steerline.startTurn(conversationId, { prompt: '' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toMatchObject({ status: 'error', code: 'invalid_request', message: expect.stringContaining('prompt') });
    // Nothing was appended for the refused start: the conversation has no turn.
    expect((await stack.nats.readAll()).filter((e) => e.event.conversationId === conversationId).map((e) => e.event.type)).toEqual(['ConversationCreated']);

    const unknown = await steerline.receipt(conversationId, conversationId).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(unknown).toMatchObject({ status: 'error', code: 'not_found' });
  });

  it('answers plain requests on the same subjects as before: {ok, data}', async () => {
    const plain = await stack.nats.nc.request(subjects(stack.prefix).createConversation, JSON.stringify({ tenantId: TENANT }), { timeout: 5_000 });
    expect(plain.json()).toEqual({ ok: true, data: { id: expect.any(String) } });
    const typed = await request<{ id: string }>(stack.nats.nc, subjects(stack.prefix).createConversation, { tenantId: TENANT }, { timeoutMs: 5_000, noResponders: 'unavailable' });
    expect(typed.id).toEqual(expect.any(String));
  });
});
