import { type KeyboardEvent, useEffect, useId, useRef, useState } from 'react';
import { useQuery } from 'urql';
import { graphql } from './generated';
import { SEARCH_DELAY_MS, useDebounced } from './ui';

// Choosing one connection among however many the tenant has: a combobox (the ARIA pattern of a text input
// with a list of suggestions, https://www.w3.org/WAI/ARIA/apg/patterns/combobox/) that asks the API for the
// connections matching what the person types, a page at a time, instead of loading them all into a <select>.
// Focus stays in the input; the option the arrow keys reach is named by aria-activedescendant.

const ConnectionOptionsQuery = graphql(`
  query ConsoleConnectionOptions($search: String, $limit: Int!) {
    connections(search: $search, limit: $limit) {
      totalCount
      nodes {
        id
        name
      }
    }
  }
`);

const ChosenConnectionQuery = graphql(`
  query ConsoleChosenConnection($id: ID!) {
    connection(id: $id) {
      id
      name
    }
  }
`);

/** Suggestions shown at once; typing more of the name narrows them. */
const OPTIONS = 20;

interface ConnectionChoice {
  id: string;
  name: string;
}

/**
 * A labelled, searchable connection picker. `value` is the chosen connection's id, '' for none; the input
 * shows its name (asked of the API when only the id is known, as from a link). Arrow keys move through the
 * suggestions, Enter chooses, Escape closes them, and **Clear** (or emptying the input) chooses none.
 */
export function ConnectionPicker({
  id,
  label,
  value,
  onChange,
  placeholder = 'Any connection',
}: {
  id: string;
  label: string;
  value: string;
  onChange: (connectionId: string) => void;
  placeholder?: string;
}) {
  const listboxId = `${id}-options`;
  const statusId = useId();
  const input = useRef<HTMLInputElement>(null);
  /** What the person typed since the input last showed the chosen connection; null while it shows it. */
  const [typed, setTyped] = useState<string | null>(null);
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(-1);
  const [picked, setPicked] = useState<ConnectionChoice | null>(null);

  const search = useDebounced((typed ?? '').trim(), SEARCH_DELAY_MS);
  const [options] = useQuery({
    query: ConnectionOptionsQuery,
    variables: { search: search || null, limit: OPTIONS },
    pause: !open,
  });
  const known = picked?.id === value ? picked : null;
  const [chosen] = useQuery({ query: ChosenConnectionQuery, variables: { id: value }, pause: !value || known !== null });
  // A connection that no longer exists (or never did) is shown by its id, as the link named it.
  const chosenName = !value ? '' : (known?.name ?? (chosen.data ? (chosen.data.connection?.name ?? value) : ''));

  const nodes = open ? (options.data?.connections.nodes ?? []) : [];
  const total = options.data?.connections.totalCount ?? 0;
  const activeOption = active >= 0 && active < nodes.length ? nodes[active] : undefined;

  // A new list of suggestions starts with none active: Enter then chooses only what the person moved to.
  const listKey = `${open}:${search}:${nodes.map((node) => node.id).join(',')}`;
  const [seenListKey, setSeenListKey] = useState(listKey);
  if (seenListKey !== listKey) {
    setSeenListKey(listKey);
    setActive(-1);
  }

  useEffect(() => {
    if (activeOption) document.getElementById(optionId(listboxId, activeOption.id))?.scrollIntoView({ block: 'nearest' });
  }, [activeOption, listboxId]);

  const choose = (choice: ConnectionChoice | null) => {
    setPicked(choice);
    setTyped(null);
    setOpen(false);
    onChange(choice?.id ?? '');
  };

  const onKeyDown = (event: KeyboardEvent<HTMLInputElement>) => {
    switch (event.key) {
      case 'ArrowDown':
      case 'ArrowUp': {
        event.preventDefault();
        if (!open || event.altKey) {
          setOpen(true);
          return;
        }
        if (nodes.length === 0) return;
        const step = event.key === 'ArrowDown' ? 1 : -1;
        setActive((current) => (current < 0 ? (step > 0 ? 0 : nodes.length - 1) : (current + step + nodes.length) % nodes.length));
        return;
      }
      case 'Enter':
        // Never submits the filter form: Enter either chooses the active suggestion or does nothing.
        event.preventDefault();
        if (open && activeOption) choose(activeOption);
        return;
      case 'Escape':
        if (open) {
          event.preventDefault();
          setOpen(false);
        } else if (typed !== null) {
          event.preventDefault();
          setTyped(null);
        }
        return;
    }
  };

  const status = !open
    ? ''
    : !options.data
      ? 'Searching…'
      : nodes.length === 0
        ? search
          ? `No connection matches “${search}”.`
          : 'No connections yet.'
        : total > nodes.length
          ? `${nodes.length} of ${total} connections shown: type more of the name to narrow them.`
          : `${nodes.length} ${nodes.length === 1 ? 'connection' : 'connections'}.`;

  return (
    <div className="picker">
      <label htmlFor={id}>{label}</label>
      <div className="picker-row">
        <input
          ref={input}
          id={id}
          type="text"
          role="combobox"
          aria-autocomplete="list"
          aria-expanded={open}
          aria-controls={listboxId}
          aria-activedescendant={open && activeOption ? optionId(listboxId, activeOption.id) : undefined}
          autoComplete="off"
          spellCheck={false}
          placeholder={placeholder}
          value={typed ?? chosenName}
          onChange={(event) => {
            setTyped(event.target.value);
            setOpen(true);
          }}
          onFocus={(event) => event.currentTarget.select()}
          onClick={() => setOpen(true)}
          onKeyDown={onKeyDown}
          onBlur={() => {
            setOpen(false);
            // Emptying the input and leaving it chooses no connection; anything else half-typed is dropped.
            if (typed !== null && typed.trim() === '' && value) choose(null);
            else setTyped(null);
          }}
        />
        {value ? (
          <button
            type="button"
            aria-label={`Clear ${label.toLowerCase()}`}
            onClick={() => {
              choose(null);
              input.current?.focus();
            }}
          >
            Clear
          </button>
        ) : null}
      </div>
      <div className="picker-popup" hidden={!open}>
        {/* Focus never leaves the input, which handles the keys; the mouse chooses here without taking focus. */}
        <div
          id={listboxId}
          role="listbox"
          aria-label={`${label} suggestions`}
          hidden={nodes.length === 0}
          onMouseDown={(e) => e.preventDefault()}
        >
          {nodes.map((node, index) => (
            // biome-ignore lint/a11y/useKeyWithClickEvents lint/a11y/useFocusableInteractive: the combobox's input keeps the focus and handles the keys of its options (aria-activedescendant)
            <div
              key={node.id}
              id={optionId(listboxId, node.id)}
              role="option"
              aria-selected={index === active}
              className={node.id === value ? 'chosen' : undefined}
              onClick={() => choose(node)}
              onMouseMove={() => setActive(index)}
            >
              {node.name}
            </div>
          ))}
        </div>
        <p className="note" aria-hidden="true">
          {nodes.length === 0 || total > nodes.length ? status : null}
        </p>
      </div>
      <span id={statusId} className="visually-hidden" role="status">
        {status}
      </span>
    </div>
  );
}

function optionId(listboxId: string, connectionId: string): string {
  return `${listboxId}-${connectionId}`;
}
