"""C++ function bodies found without a compiler, for scripts/check_shape.py: comments, string and
character literals and preprocessor lines are blanked, then braces are matched, and a brace at
namespace or class scope opens a function body when the text before it looks like a declarator
(a `)` then only qualifiers, or a constructor's initializer list). Nested bodies (lambdas, local
classes) count towards the function holding them. A body's length is the line of its `}` minus
the line of its `{`, as clang-tidy's readability-function-size counts it; scripts/check-code.sh
--all runs that check on the compiler's AST as well."""
import re

_CONTAINER = re.compile(r"\b(namespace|class|struct|union|enum|extern)\b")
_OPERATOR = re.compile(r"\boperator\s*(\(\)|[^\s(]+)")
_QUALIFIERS = re.compile(r"^(\s*(const|override|final|noexcept|mutable|volatile|&|&&|"
                         r"noexcept\s*\([^()]*\)|->\s*[\w:<>,*&\s]+))*\s*$")


def _blank(text):
    """Comments, literals and preprocessor lines become spaces; newlines stay."""
    out, i, n = [], 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c == "\n":
            at_line_start = True
        elif not c.isspace():
            at_line_start = False
        j = _literal_end(text, i)
        if j > i:
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _literal_end(text, i):
    """Where the comment or literal starting at i ends (i when none starts there)."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return len(text) if j < 0 else j + 2
    m = re.match(r'R"([^()\\\s]{0,16})\(', text[i:i + 20])
    if m and not (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
        j = text.find(")" + m.group(1) + '"', i + m.end())
        return len(text) if j < 0 else j + len(m.group(1)) + 2
    if text[i] == '"' or (text[i] == "'" and not (i > 0 and text[i - 1].isalnum())):
        quote, j = text[i], i + 1
        while j < len(text) and text[j] != quote and text[j] != "\n":
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return i


def _opens_function(head):
    """Whether `head`, the text since the last `;`, `{` or `}` at this scope, declares a
    function whose body the next `{` opens."""
    head = _OPERATOR.sub("operator_", head)
    if _CONTAINER.search(head) or "(" not in head:
        return False
    depth, last_close, init_colon = 0, -1, False
    for k, ch in enumerate(head):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
            if ch == ")" and depth == 0:
                last_close = k
        elif ch == "=" and depth == 0:
            return False
        elif ch == ":" and depth == 0 and last_close >= 0 and "::" not in head[k - 1:k + 2]:
            init_colon = True
    if last_close < 0:
        return False
    tail = head[last_close + 1:]
    return bool(_QUALIFIERS.match(tail)) or (init_colon and tail.rstrip().endswith(")"))


def functions(text):
    """(name, first line, body length) of every function body at namespace or class scope."""
    code = _blank(text)
    stack, head = [], []
    line = 1
    for ch in code:
        if ch == "\n":
            line += 1
        in_function = any(kind == "function" for kind, _, _ in stack)
        if ch == "{":
            if in_function:
                stack.append(("other", line, ""))
                continue
            h = "".join(head)
            kind = "function" if _opens_function(h) else (
                "container" if _CONTAINER.search(h) else "other")
            name = re.findall(r"([~\w:]+)\s*\(", h)
            stack.append((kind, line, name[0] if name else "?"))
            if kind != "other":
                head = []
        elif ch == "}" and stack:
            kind, first, name = stack.pop()
            if kind == "function":
                yield name, first, line - first
            if not in_function or kind == "function":
                head = head + ["{}"] if kind == "other" else []
        elif not in_function:
            if ch == ";":
                head = []
            elif ch != "\n" or head:
                head.append(ch)
