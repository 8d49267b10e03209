/* eslint-disable @typescript-eslint/no-explicit-any */
import { useQuery } from "@apollo/client/react";
import { ComboBox } from "gestalt";
import { useEffect, useState } from "react";
import { useNavigate } from "react-router";
import { document } from "../documents";
import { entityUrl } from "../urls";

// A search box that suggests entities as a person types (a misspelt name still finds its
// service) and opens the one they pick; Enter searches the catalog.
export function Suggest() {
  const navigate = useNavigate();
  const [text, setText] = useState("");
  const [search, setSearch] = useState("");
  useEffect(() => {
    const timer = setTimeout(() => setSearch(text.trim()), 150);
    return () => clearTimeout(timer);
  }, [text]);
  const { data, error } = useQuery<any>(document("Suggest"), {
    variables: { search },
    skip: search.length < 2,
  });
  const options = (search.length < 2 ? [] : (data?.entities.nodes ?? [])).map((e: any) => ({
    label: e.title || e.name,
    subtext: e.ref,
    value: e.ref,
  }));
  return (
    <ComboBox
      id="home-search"
      label="Search the catalog"
      labelDisplay="hidden"
      placeholder="Search services, APIs, teams and people"
      accessibilityClearButtonLabel="Clear the search"
      noResultText={error ? `Suggestions failed: ${error.message}` : "Nothing matches yet"}
      inputValue={text}
      options={options}
      onChange={({ value }) => setText(value)}
      onClear={() => setText("")}
      onKeyDown={({ event, value }) => {
        if (event.key === "Enter" && value.trim()) {
          navigate(`/catalog?q=${encodeURIComponent(value.trim())}`);
        }
      }}
      onSelect={({ item }) => navigate(entityUrl(item.value))}
    />
  );
}
