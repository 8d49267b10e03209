// The console's vocabulary: Gestalt's components with the props Atrium uses, one name each.
// Pages compose only these (and the frame's CSS classes), and the server renders the same
// markup from the same components: `npm run build` renders every one of them here with
// placeholders (kit/snippets.tsx) into the templates the server fills (ssr/kit.py). A page the
// server wrote and the page React renders are then the same elements with the same classes, so
// React's first render moves nothing.
import {
  Avatar as GAvatar,
  Badge as GBadge,
  Button as GButton,
  ButtonLink as GButtonLink,
  Datapoint as GDatapoint,
  Heading,
  Icon,
  IconButton as GIconButton,
  Link as GLink,
  SegmentedControl,
  SelectList,
  Status as GStatus,
  Table as GTable,
  Tabs as GTabs,
  Text as GText,
} from "gestalt";
import type { ReactNode } from "react";

type Children = { children?: ReactNode };

// Headings: the page's title, a section's, a card's.
export function PageTitle({ children }: Children) {
  return (
    <Heading accessibilityLevel={1} size="600">
      {children}
    </Heading>
  );
}

export function SectionTitle({ id, children }: Children & { id: string }) {
  return (
    <Heading accessibilityLevel={2} size="400" id={id}>
      {children}
    </Heading>
  );
}

export function CardTitle({ children }: Children) {
  return (
    <Heading accessibilityLevel={3} size="300">
      {children}
    </Heading>
  );
}

export const TEXT_TONES = ["default", "subtle", "error", "success", "warning"] as const;
export type Tone = (typeof TEXT_TONES)[number];

// A block of text (a paragraph), in one of a few tones.
export function Para({ tone = "default", children }: Children & { tone?: Tone }) {
  return <GText color={tone}>{children}</GText>;
}

// Text within a line.
export function Span({ tone = "default", children }: Children & { tone?: Tone }) {
  return (
    <GText inline color={tone}>
      {children}
    </GText>
  );
}

// Small print: a line under a title, a cell's second line.
export function Small({ tone = "subtle", children }: Children & { tone?: Tone }) {
  return (
    <GText size="200" color={tone}>
      {children}
    </GText>
  );
}

export function Strong({ children }: Children) {
  return (
    <GText inline weight="bold">
      {children}
    </GText>
  );
}

// A description cut to two lines (its whole text in the title).
export function Clamp({ text }: { text: string }) {
  return (
    <GText size="200" color="subtle" lineClamp={2} title={text}>
      {text}
    </GText>
  );
}

// Links. Within the console a click is a client-side navigation (GlobalEventsHandlerProvider in
// App.tsx); `onPoint` runs when a person points at it (hover or focus), to fetch ahead.
export function AppLink({
  href,
  children,
  onPoint,
  strong,
}: Children & { href: string; onPoint?: () => void; strong?: boolean }) {
  return (
    <GLink
      href={href}
      underline={strong ? "hover" : "always"}
      display="inline"
      _onMouseEnter={onPoint}
      onFocus={onPoint}
    >
      <GText inline weight={strong ? "bold" : "normal"}>
        {children}
      </GText>
    </GLink>
  );
}

// A link out of the console, marked as such.
export function ExternalLink({ href, children }: Children & { href: string }) {
  return (
    <GLink href={href} underline="always" display="inline" target="blank" rel="nofollow" externalLinkIcon="default">
      <GText inline>{children}</GText>
    </GLink>
  );
}

export const BADGE_TYPES = ["neutral", "info", "success", "warning", "error", "recommendation"] as const;
export type BadgeType = (typeof BADGE_TYPES)[number];

export function Badge({ text, type = "neutral" }: { text: string; type?: BadgeType }) {
  return <GBadge text={text} type={type} />;
}

export const STATUS_TYPES = [
  "unstarted",
  "queued",
  "inProgress",
  "halted",
  "ok",
  "problem",
  "canceled",
  "warning",
] as const;
export type StatusType = (typeof STATUS_TYPES)[number];

// A state with its icon: a deploy's, a workload's, an alert's.
export function Status({ type, title }: { type: StatusType; title: string }) {
  return <GStatus type={type} title={title} />;
}

// A person or a team: their picture, else their initial.
export function Avatar({ name, src, size = "xs" }: { name: string; src?: string | null; size?: "xs" | "sm" | "md" }) {
  return <GAvatar name={name} src={src ?? undefined} size={size} />;
}

// A figure with its title: a rate, a ratio, a count.
export function Figure({ title, value }: { title: string; value: string }) {
  return <GDatapoint title={title} value={value} size="md" />;
}

export function ButtonLink({ href, text }: { href: string; text: string }) {
  return <GButtonLink href={href} text={text} size="md" color="gray" />;
}

export function Button({
  text,
  onClick,
  danger,
  disabled,
  primary,
}: {
  text: string;
  onClick?: () => void;
  danger?: boolean;
  primary?: boolean;
  disabled?: boolean;
}) {
  return (
    <GButton
      text={text}
      size="md"
      color={danger ? "red" : primary ? "blue" : "gray"}
      disabled={disabled}
      onClick={() => onClick?.()}
    />
  );
}

// A form's submit button: the form works without JavaScript too. Gray for a secondary action.
export function SubmitButton({ text, gray }: { text: string; gray?: boolean }) {
  return <GButton text={text} size="md" color={gray ? "gray" : "blue"} type="submit" />;
}

export function IconButton({
  label,
  icon,
  selected,
  onClick,
}: {
  label: string;
  icon: "star" | "star-outline" | "contrast";
  selected?: boolean;
  onClick?: () => void;
}) {
  return (
    <GIconButton
      accessibilityLabel={label}
      icon={icon}
      size="md"
      iconColor={selected ? "red" : "darkGray"}
      selected={selected}
      onClick={() => onClick?.()}
    />
  );
}

export function SmallIcon({ icon, label }: { icon: "arrow-up" | "arrow-down"; label: string }) {
  return <Icon icon={icon} size={12} color="subtle" accessibilityLabel={label} />;
}

// A range of time to look back over (a number and its unit never split over two lines).
export const RANGES: [string, number][] = [
  ["1\u00a0h", 3600],
  ["24\u00a0h", 86400],
  ["7\u00a0d", 604800],
];

export function RangeChoice({ selected, onChange }: { selected: number; onChange?: (index: number) => void }) {
  return (
    <SegmentedControl
      items={RANGES.map(([label]) => label)}
      responsive
      selectedItemIndex={selected}
      size="sm"
      onChange={({ activeIndex }) => onChange?.(activeIndex)}
    />
  );
}

// Sections of a page, as tabs that move to them (in-page navigation).
export function SectionTabs({
  tabs,
  active,
  onChange,
}: {
  tabs: { id: string; text: string }[];
  active: number;
  onChange?: (index: number) => void;
}) {
  return (
    <GTabs
      activeTabIndex={active}
      tabs={tabs.map((t) => ({ href: `#${t.id}`, text: t.text }))}
      onChange={({ activeTabIndex, dangerouslyDisableOnNavigation }) => {
        dangerouslyDisableOnNavigation();
        onChange?.(activeTabIndex);
      }}
    />
  );
}

// A choice among a few values, as a native select: it works without JavaScript in a form.
export function Select({
  id,
  label,
  value,
  options,
  onChange,
}: {
  id: string;
  label: string;
  value: string;
  options: { value: string; label: string }[];
  onChange?: (value: string) => void;
}) {
  return (
    <SelectList id={id} name={id} label={label} size="md" value={value} onChange={({ value: v }) => onChange?.(v)}>
      {options.map((o) => (
        <SelectList.Option key={o.value} label={o.label} value={o.value} />
      ))}
    </SelectList>
  );
}

// Tables: Gestalt's, with a caption for screen readers.
export function Table({ label, children }: Children & { label: string }) {
  return <GTable accessibilityLabel={label}>{children}</GTable>;
}
export function THead({ children }: Children) {
  return <GTable.Header>{children}</GTable.Header>;
}
export function TBody({ children }: Children) {
  return <GTable.Body>{children}</GTable.Body>;
}
export function Row({ children }: Children) {
  return <GTable.Row>{children}</GTable.Row>;
}
export function Th({ children }: Children) {
  return (
    <GTable.HeaderCell>
      <GText size="200" weight="bold">
        {children}
      </GText>
    </GTable.HeaderCell>
  );
}
export function Td({ children }: Children) {
  return <GTable.Cell>{children}</GTable.Cell>;
}
