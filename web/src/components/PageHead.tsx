import type { ReactNode } from "react";
import { AppLink, Badge, type BadgeType, PageTitle, Para, Small } from "../kit";

interface Props {
  title: string;
  crumbs?: [string, string][];
  badges?: [string, BadgeType][];
  lead?: string | null;
  facts?: [string, ReactNode][];
  actions?: ReactNode;
}

// Crumbs, the title and its actions, badges, a lead and facts (ssr/templates/_macros.html,
// page_head).
export function PageHead({ title, crumbs = [], badges = [], lead, facts = [], actions }: Props) {
  return (
    <>
      {crumbs.length ? (
        <nav aria-label="Breadcrumb">
          <ol className="atrium-crumbs">
            {crumbs.map(([href, text]) => (
              <li key={href}>
                <AppLink href={href}>{text}</AppLink>
              </li>
            ))}
          </ol>
        </nav>
      ) : null}
      <div className="atrium-titlebar">
        <div>
          <PageTitle>{title}</PageTitle>
        </div>
        {actions ? <div className="atrium-actions">{actions}</div> : null}
      </div>
      {badges.length ? (
        <div className="atrium-badges">
          {badges.map(([text, type], i) => (
            <Badge key={i} text={text} type={type} />
          ))}
        </div>
      ) : null}
      {lead ? (
        <div className="atrium-lead">
          <Para>{lead}</Para>
        </div>
      ) : null}
      {facts.length ? (
        <dl className="atrium-facts">
          {facts.map(([term, value]) => (
            <div key={term}>
              <dt>
                <Small>{term}</Small>
              </dt>
              <dd>{value}</dd>
            </div>
          ))}
        </dl>
      ) : null}
    </>
  );
}
