/**
 * What can be done to one check from its page (docs/dashboard.md, "Managing checks"): edit, clone, delete, pause
 * and resume. A check of the configuration file (or of a bulk or discovery source) is read-only here, its source
 * named: the next reload would undo a change; it can still be paused, as the API allows. Nothing is offered without
 * the scope `write`.
 */
import { useState } from 'preact/hooks';
import { send } from './api.ts';
import { DeleteButton } from './resource-form.tsx';
import { useCan } from './session.tsx';
import { Failure } from './status.tsx';

interface Props {
  name: string;
  source: string;
  paused: boolean;
  refresh: () => void;
}

export function CheckActions({ name, source, paused, refresh }: Props) {
  const can = useCan();
  const [error, setError] = useState<string | undefined>(undefined);
  const path = `/api/v1/healthcheck/${encodeURIComponent(name)}`;
  const editable = source === 'api';
  const readOnly = (
    <p class="source">
      {source === 'configuration'
        ? 'Defined in the configuration file: read-only here.'
        : `Defined by the source ${source}: read-only here.`}
    </p>
  );
  if (!can('write')) return editable ? null : readOnly;
  const act = (action: 'pause' | 'resume') =>
    send('POST', `${path}/${action}`, {}).then(
      () => {
        setError(undefined);
        refresh();
      },
      (failure: Error) => setError(failure.message),
    );
  return (
    <>
      {!editable && readOnly}
      <div class="actions check-actions">
        {editable && (
          <a class="button" href={`#/check/${encodeURIComponent(name)}/edit`}>
            Edit
          </a>
        )}
        <a class="button" href={`#/check/${encodeURIComponent(name)}/clone`}>
          Clone
        </a>
        {paused ? (
          <button type="button" onClick={() => void act('resume')}>
            Resume
          </button>
        ) : (
          <button type="button" onClick={() => void act('pause')}>
            Pause
          </button>
        )}
        {editable && (
          <DeleteButton
            what={name}
            path={path}
            onDone={() => {
              location.hash = '#/checks';
            }}
          />
        )}
      </div>
      <Failure message={error} />
    </>
  );
}

/** A heartbeat check is reported to rather than run: where its job reports, instead of a response-time chart. */
export function HeartbeatUrls({ name }: { name: string }) {
  const url = `${location.origin}/api/v1/heartbeat/${encodeURIComponent(name)}`;
  return (
    <>
      <h3>Reports</h3>
      <p>Its job reports a success to, and a failure (with its output as the body) to:</p>
      <pre class="heartbeat-urls">{`curl -fsS -X POST ${url}\ncurl -fsS --data-binary @output.log ${url}/fail`}</pre>
      <p class="shown">
        With credentials configured, add the check's token or a heartbeat-scoped token (docs/checks.md, "Heartbeat").
      </p>
    </>
  );
}
