import { Controller, Get, HttpCode, Inject, Param, Post, Put } from '@nestjs/common';
import { AGENT_NAME, AgentListSchema, AgentSchema, CreateAgentBody, NextAgentVersionBody, SteerlineError, agentNotFound, type Agent, type AgentList } from '@steerline/contracts';
import { Tenant } from '../auth/auth.guard';
import { ApiDoc } from '../docs/api-doc';
import { JsonBody } from '../http/params';
import { AgentsService } from './agents.service';

const NAME_PARAM = { name: { description: 'the agent’s name (letters, digits, _ and -, at most 64)', schema: { type: 'string', pattern: AGENT_NAME.source }, example: 'reviewer' } };
const VERSION_PARAM = { version: { description: 'a version number, from 1', schema: { type: 'string', pattern: '^[1-9][0-9]{0,8}$' }, example: '1' } };

/** docs/design.md §6.1: a tenant's versioned agents. A version, once made, never changes. */
@Controller('v1/agents')
export class AgentsController {
  constructor(@Inject(AgentsService) private readonly agents: AgentsService) {}

  @Post()
  @HttpCode(201)
  @ApiDoc({
    summary: 'Create an agent: its version 1',
    body: CreateAgentBody,
    responses: {
      201: { description: 'the agent’s version 1', schema: AgentSchema },
      400: 'invalid_request: a bad definition (the message names the field)',
      409: 'already_exists: the tenant has an agent of that name (PUT makes its next version)',
      503: 'unavailable: the agent store does not answer',
    },
  })
  create(@Tenant() tenantId: string, @JsonBody(CreateAgentBody) body: CreateAgentBody): Promise<Agent> {
    const { name, ...definition } = body;
    return this.agents.create(tenantId, name, definition);
  }

  @Put(':name')
  @ApiDoc({
    summary: 'Make the agent’s next version from a whole definition',
    params: NAME_PARAM,
    body: NextAgentVersionBody,
    responses: {
      200: { description: 'the new version', schema: AgentSchema },
      400: 'invalid_request: a bad definition (the message names the field)',
      404: 'not_found: the tenant has no agent of that name',
      503: 'unavailable',
    },
  })
  next(@Tenant() tenantId: string, @Param('name') name: string, @JsonBody(NextAgentVersionBody) body: NextAgentVersionBody): Promise<Agent> {
    return this.agents.next(tenantId, agentName(name), body);
  }

  @Get()
  @ApiDoc({ summary: 'The tenant’s agents, each at its latest version', responses: { 200: { description: '{agents: [Agent]}, by name', schema: AgentListSchema }, 503: 'unavailable' } })
  async list(@Tenant() tenantId: string): Promise<AgentList> {
    return { agents: await this.agents.list(tenantId) };
  }

  @Get(':name')
  @ApiDoc({
    summary: 'An agent’s latest version',
    params: NAME_PARAM,
    responses: { 200: { description: 'the latest version', schema: AgentSchema }, 400: 'invalid_request', 404: 'not_found: no such agent for this tenant', 503: 'unavailable' },
  })
  latest(@Tenant() tenantId: string, @Param('name') name: string): Promise<Agent> {
    return this.found(tenantId, agentName(name));
  }

  @Get(':name/versions/:version')
  @ApiDoc({
    summary: 'One version of an agent',
    params: { ...NAME_PARAM, ...VERSION_PARAM },
    responses: { 200: { description: 'that version', schema: AgentSchema }, 400: 'invalid_request', 404: 'not_found: no such agent or version for this tenant', 503: 'unavailable' },
  })
  version(@Tenant() tenantId: string, @Param('name') name: string, @Param('version') version: string): Promise<Agent> {
    if (!/^[1-9][0-9]{0,8}$/.test(version)) throw new SteerlineError('invalid_request', 'version must be a positive integer');
    return this.found(tenantId, agentName(name), Number(version));
  }

  private async found(tenantId: string, name: string, version?: number): Promise<Agent> {
    const agent = await this.agents.read(tenantId, name, version);
    if (!agent) throw agentNotFound(name, version);
    return agent;
  }
}

function agentName(name: string): string {
  if (!AGENT_NAME.test(name)) throw new SteerlineError('invalid_request', 'name must be an agent name (letters, digits, _ and -, at most 64)');
  return name;
}
