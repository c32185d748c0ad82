import type { RawSql } from '../db/client.js';
import type { ConnectionStatus, ConnectionVia } from '../generated/prisma/enums.js';
import { formatId } from '../prefixed-ids.js';
import {
  connectionMemberProblems,
  type ConnectionKind,
  type ConnectionMetadata,
  type ConnectionSettings,
  type SyncInterval,
} from '../domain/connection-members.js';
import { CONNECTION, SEEDED_CONNECTION_PROPERTIES } from '../domain/connection-record.js';
import { unnestedColumns, unnestedValues } from './bulk-insert.js';
import { kindOfApplication, type CatalogApplication } from './catalog.js';
import type { Rng } from './random.js';

export interface ConnectionRow {
  id: string;
  tenantId: string;
  applicationId: string;
  name: string;
  slug: string;
  description: string;
  logoUrl: string;
  keywords: string[];
  via: ConnectionVia;
  status: ConnectionStatus;
  metadata: ConnectionMetadata;
  settings: ConnectionSettings;
  createdAt: Date;
}

interface ConnectionSpec {
  tenantId: string;
  application: CatalogApplication;
  /** Shown after the application name: "Stripe – EU account". */
  label: string;
  slug: string;
  via?: ConnectionVia;
  status?: ConnectionStatus;
  createdAt: Date;
  metadata?: ConnectionMetadata;
  settings?: Partial<ConnectionSettings>;
}

const REGIONS = ['eu-west-1', 'eu-central-1', 'us-east-1', 'us-west-2', 'ap-southeast-1'];
const VERSIONS = ['v1', 'v2', 'v3', '2024-06-20', '2025-01-15'];
const LOCATIONS = [
  'Berlin Mitte – Main entrance',
  'Lisbon Alfama – Building B',
  'Vienna Naschmarkt – Staff door',
  'Amsterdam Jordaan – Garage',
  'Prague Old Town – Reception',
];
const CURRENCIES = ['EUR', 'USD', 'GBP', 'CHF', 'CZK'];
const CHANNELS = ['#front-desk', '#ops-alerts', '#housekeeping', '#revenue', 'Guest messages'];
const BOT_NAMES = ['SyncBot', 'Concierge', 'Night Auditor', 'Door Watch'];

function metadataFor(rng: Rng, kind: ConnectionKind): ConnectionMetadata {
  const metadata: ConnectionMetadata = { region: rng.pick(REGIONS), version: rng.pick(VERSIONS) };
  switch (kind) {
    case 'lock':
      metadata.location = rng.pick(LOCATIONS);
      break;
    case 'pms':
      metadata.property_id = `prop_${rng.int(1000, 99999)}`;
      break;
    case 'payments':
      metadata.gateway_id = `gw_${rng.hex(12)}`;
      metadata.currency = rng.pick(CURRENCIES);
      break;
    case 'accounting':
      metadata.currency = rng.pick(CURRENCIES);
      break;
    case 'messaging':
      metadata.channel = rng.pick(CHANNELS);
      metadata.bot_name = rng.pick(BOT_NAMES);
      break;
    case 'analytics':
      break;
  }
  return metadata;
}

function settingsFor(rng: Rng, kind: ConnectionKind): ConnectionSettings {
  const settings: ConnectionSettings = {
    sync_interval: rng.weighted<SyncInterval>([
      ['15m', 4],
      ['1h', 3],
      ['6h', 2],
      ['24h', 1],
    ]),
    webhook_enabled: rng.chance(0.6),
    retry_attempts: rng.int(0, 5),
    notification_enabled: rng.chance(0.7),
  };
  if (kind === 'messaging') {
    settings.mention_users = rng.chance(0.5);
    settings.thread_enabled = rng.chance(0.6);
  }
  if (kind === 'analytics') {
    settings.track_users = rng.chance(0.5);
    settings.anonymize_ip = rng.chance(0.8);
  }
  return settings;
}

export function buildConnection(rng: Rng, spec: ConnectionSpec): ConnectionRow {
  const kind = kindOfApplication(spec.application);
  const id = formatId('con', rng.bytes(16));
  const metadata = { ...metadataFor(rng, kind), ...spec.metadata };
  const settings = { ...settingsFor(rng, kind), ...spec.settings };
  // The seed writes what the API would accept: the same table of members per kind.
  const problems = connectionMemberProblems(kind, { metadata, settings });
  if (problems.length > 0) {
    throw new Error(`seed connection ${spec.slug}: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`);
  }
  return {
    id,
    tenantId: spec.tenantId,
    applicationId: spec.application.id,
    name: `${spec.application.name} – ${spec.label}`,
    slug: spec.slug,
    description: `${spec.application.description} Connected for ${spec.label}.`,
    logoUrl: spec.application.logoUrl,
    keywords: [...spec.application.keywords],
    via:
      spec.via ??
      rng.weighted<ConnectionVia>([
        ['oauth', 5],
        ['api_key', 3],
        ['partner', 1],
        ['manual', 1],
      ]),
    status:
      spec.status ??
      rng.weighted<ConnectionStatus>([
        ['active', 16],
        ['paused', 2],
        ['error', 1],
        ['pending', 1],
      ]),
    metadata,
    settings,
    createdAt: spec.createdAt,
  };
}

/** Every column the descriptor does not leave to its default, as one text[] parameter (bulk-insert.ts). */
const COLUMNS = unnestedColumns(CONNECTION.fields, SEEDED_CONNECTION_PROPERTIES);

// A loaded connection was last updated when it was created.
const INSERT_CONNECTIONS = `
INSERT INTO connections (tenant_id, ${COLUMNS.columns}, updated_at)
SELECT $1, ${COLUMNS.values}, t.created_at::timestamptz
FROM ${COLUMNS.from}`;

export async function insertConnections(sql: Pick<RawSql, 'query'>, tenantId: string, rows: ConnectionRow[]): Promise<void> {
  if (rows.length === 0) return;
  for (const row of rows) {
    if (row.tenantId !== tenantId) throw new Error(`connection ${row.id} belongs to another tenant`);
  }
  const values = unnestedValues(CONNECTION.fields, SEEDED_CONNECTION_PROPERTIES, rows);
  await sql.query(INSERT_CONNECTIONS, [tenantId, ...values]);
}
