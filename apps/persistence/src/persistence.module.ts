import { Module, type DynamicModule } from '@nestjs/common';
import { PERSISTENCE_CONFIG, type PersistenceConfig } from './config';
import { ConnectionCloser, connectionProviders } from './connections';
import { PersistenceMetrics } from './observability/persistence-metrics';
import { Projector } from './projector/projector';
import { ConversationList } from './queries/conversation-list';
import { QueryResponders } from './queries/query-responders';
import { ReadQueries } from './queries/read-queries';

@Module({})
export class PersistenceModule {
  static forRoot(config: PersistenceConfig): DynamicModule {
    return {
      module: PersistenceModule,
      providers: [
        { provide: PERSISTENCE_CONFIG, useValue: config },
        ...connectionProviders(config),
        ConnectionCloser,
        { provide: PersistenceMetrics, useValue: new PersistenceMetrics() },
        Projector,
        ReadQueries,
        ConversationList,
        QueryResponders,
      ],
    };
  }
}
