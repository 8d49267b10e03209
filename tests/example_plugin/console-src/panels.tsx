// The hello plugin's console module: built against the console's SDK into
// ../atrium_hello/console/panels.js (vite.config.mjs); the server renders the same panel from
// ../atrium_hello/templates/hello_panel.html, and React hydrates that HTML.
import { Card, Para, Section, Small, useOperation, type PanelProps, type PluginPanel } from "@atrium/console";
import HelloPanel from "../atrium_hello/console/HelloPanel.graphql?raw";

function Hello({ pageRef }: PanelProps) {
  const { data } = useOperation("HelloPanel", { ref: pageRef });
  if (!data?.entity) return null;
  return (
    <Section id="hello" title="Hello">
      <Card title="Greeting">
        <Para>{data.greeting}</Para>
        <Small>{`From the hello plugin's own package, for this ${data.entity.kind}.`}</Small>
      </Card>
    </Section>
  );
}

export const operations = { HelloPanel };

export const panels: PluginPanel[] = [
  { page: "entity", kinds: ["component"], requires: "HelloPanel", section: ["hello", "Hello"], component: Hello },
];
