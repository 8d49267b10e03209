import { useEffect, useState } from "react";
import { SectionTabs } from "../kit";
import type { Section } from "../present";

// The page's sections as tabs (the kit's SectionTabs); the tab of the section in view is the
// active one as the page scrolls. The server marks the first (ssr/kit.py, tabs).
export function Tabs({ sections }: { sections: Section[] }) {
  const [active, setActive] = useState(0);
  const ids = sections.map((s) => s.tab[0]).join(" ");
  useEffect(() => {
    const targets = ids
      .split(" ")
      .map((id) => document.getElementById(id))
      .filter((el): el is HTMLElement => el !== null);
    if (!targets.length || !("IntersectionObserver" in window)) return;
    const visible = new Map<string, boolean>();
    const observer = new IntersectionObserver(
      (entries) => {
        for (const entry of entries) visible.set(entry.target.id, entry.isIntersecting);
        const first = ids.split(" ").findIndex((id) => visible.get(id));
        if (first >= 0) setActive(first);
      },
      { rootMargin: "-80px 0px -60% 0px" },
    );
    for (const target of targets) observer.observe(target);
    return () => observer.disconnect();
  }, [ids]);
  return (
    <div className="atrium-tabs">
      <SectionTabs
        tabs={sections.map((s) => ({ id: s.tab[0], text: s.tab[1] }))}
        active={active}
        onChange={(index) => {
          setActive(index);
          const target = document.getElementById(sections[index].tab[0]);
          target?.scrollIntoView({ behavior: "smooth", block: "start" });
          history.replaceState(history.state, "", `#${sections[index].tab[0]}`);
        }}
      />
    </div>
  );
}
