/**
 * The NATS clients, imported when a node joins a cluster and never before: the bundle keeps `import()` of an
 * external package as it is, so a single node (no `cluster:`) does not even load them (docs/cluster.md).
 */
import type { JetStreamManager, RetentionPolicy, StorageType, StreamConfig } from '@nats-io/jetstream';

export async function loadNats() {
  const [transport, jetstreamModule, kv, obj] = await Promise.all([
    import('@nats-io/transport-node'),
    import('@nats-io/jetstream'),
    import('@nats-io/kv'),
    import('@nats-io/obj'),
  ]);
  return {
    connect: transport.connect,
    AuthorizationError: transport.AuthorizationError,
    credsAuthenticator: transport.credsAuthenticator,
    nkeyAuthenticator: transport.nkeyAuthenticator,
    tokenAuthenticator: transport.tokenAuthenticator,
    usernamePasswordAuthenticator: transport.usernamePasswordAuthenticator,
    UserAuthenticationExpiredError: transport.UserAuthenticationExpiredError,
    jetstream: jetstreamModule.jetstream,
    jetstreamManager: jetstreamModule.jetstreamManager,
    Kvm: kv.Kvm,
    Objm: obj.Objm,
  };
}

/**
 * Creates the JetStream stream `name` of the subjects under `subjectPrefix`, on file, with `limits` (its discard
 * policy, ages, sizes, replicas), unless a stream of that name exists: an existing stream keeps the settings it was
 * made with.
 */
export async function addStreamIfAbsent(
  jsm: JetStreamManager,
  name: string,
  subjectPrefix: string,
  limits: Omit<Partial<StreamConfig>, 'name' | 'subjects'>,
): Promise<void> {
  try {
    await jsm.streams.info(name);
  } catch {
    await jsm.streams.add({
      name,
      subjects: [`${subjectPrefix}>`],
      // The enums' values, spelled out: the module is loaded only when a node joins (loadNats).
      retention: 'limits' as RetentionPolicy,
      storage: 'file' as StorageType,
      ...limits,
    });
  }
}
