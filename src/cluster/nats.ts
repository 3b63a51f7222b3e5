/**
 * The NATS clients, imported when a node joins a cluster and never before: the bundle keeps `import()` of an
 * external package as it is, so a single node (no `cluster:`) does not even load them (docs/cluster.md).
 */
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
