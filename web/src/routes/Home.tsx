/* eslint-disable @typescript-eslint/no-explicit-any */
import { useQuery } from "@apollo/client/react";
import { EntityLink } from "../components/EntityLink";
import { Panel } from "../components/Panel";
import { Suggest } from "../components/Suggest";
import { document } from "../documents";

export default function Home() {
  const { data, error, loading } = useQuery<any>(document("HomePage"));
  const v = data?.viewer;
  const name = v?.user ? v.user.profile?.displayName || v.user.title || v.user.name : null;
  return (
    <>
      <h1 className="atrium-title">{name ? `Welcome, ${name}` : "Atrium"}</h1>
      <Suggest />
      {error ? (
        <p className="atrium-error" role="alert">
          Could not load your teams: {error.message}
        </p>
      ) : loading && !v ? (
        <p className="atrium-loading" role="status">
          Loading…
        </p>
      ) : !v?.ref ? (
        <p>Search the catalog above, or sign in to see your teams.</p>
      ) : v.groups.length ? (
        <Panel id="teams" heading="Your teams">
          {v.groups.map((g: any) => (
            <div key={g.ref}>
              <h3>
                <EntityLink entity={g} />
              </h3>
              {g.owns.length ? (
                <ul className="atrium-list">
                  {g.owns.map((e: any) => (
                    <li key={e.ref}>
                      <EntityLink entity={e} /> <span className="atrium-muted">{e.kind}</span>
                    </li>
                  ))}
                </ul>
              ) : (
                <p className="atrium-muted">Owns nothing.</p>
              )}
            </div>
          ))}
        </Panel>
      ) : (
        <p>You are in no team yet.</p>
      )}
    </>
  );
}
