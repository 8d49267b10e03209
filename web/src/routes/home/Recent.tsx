import { EntityList } from "../../components/EntityLink";
import { Empty } from "../../components/Section";
import { recentVisits } from "../../recent";

// Pages this browser opened lately (kept in it: what one looks at is nobody else's business).
export function Recent() {
  const visits = recentVisits();
  return (
    <div className="atrium-recent">
      {visits.length ? (
        <div className="atrium-card">
          <EntityList items={visits} empty="" />
        </div>
      ) : (
        <Empty text="Pages you open show up here." />
      )}
    </div>
  );
}
