import { useLocation } from "react-router";
import { PageHead } from "../components/PageHead";
import { ButtonLink } from "../kit";
import { usePageMeta } from "../pageMeta";
import { missingSearchHref } from "../present";

// Nothing at this address (404), or an address the console cannot read (400): what happened,
// and a way on (ssr/templates/missing.html).
export function Missing({ status = 404, reason }: { status?: 404 | 400; reason?: string }) {
  const { pathname } = useLocation();
  const title = status === 404 ? "Not found" : "Not a valid address";
  usePageMeta(title, status === 404 ? "No page of the console is at this address." : "This address is not one the console can show.");
  const lead =
    reason ??
    (status === 404 ? "No page of the console is at this address." : "This address is not one the console can show.");
  return (
    <>
      <PageHead title={title} lead={lead} />
      <div className="atrium-actions atrium-way-on">
        <ButtonLink href={missingSearchHref(pathname)} text="Search the catalog" />
        <ButtonLink href="/" text="Go home" />
      </div>
    </>
  );
}

export default function MissingRoute() {
  return <Missing status={404} />;
}
