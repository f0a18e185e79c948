"""Issue templates: the lines an issue repeats from the repository's templates are not the task."""

from __future__ import annotations

from pathlib import Path

from cra.dataflows.retrieval.issue_templates import _template_keys, analysed_text
from cra.drivers.index.indexer import index_repository
from cra.drivers.kb.store import default_kb_dir, load_kb
from cra.drivers.retrieval.retriever import retrieve

MARKDOWN_TEMPLATE = """---
name: Bug report
about: Create a report to help us improve
---

## Bug Report

<!-- A clear and concise description of what the bug is. -->

#### Current Behavior

#### Expected Behavior

- [ ] I have looked at the documentation and the examples
- Python version: [e.g. `python --version`]
- Operating system: [e.g. Ubuntu 24.04]
"""

FORM_TEMPLATE = """name: Bug
description: File a bug report
body:
  - type: textarea
    attributes:
      label: "Current Behavior"
      description: What happens now?
  - type: checkboxes
    attributes:
      label: Checklist
      options:
        - label: I have looked at the documentation and the examples
          required: true
"""

ISSUE = """Parser drops the trailing comma of a list

## Bug Report

#### Current Behavior
`parse_list("a, b,")` drops the last item.

```
## Bug Report
```

#### Expected Behavior
It keeps an empty item.

- [x] I have looked at the documentation and the examples
- **Python version**: [e.g. python --version] 3.12 on `PyPy`
- Operating system: Debian
"""


def test_the_task_loses_template_lines_and_keeps_its_own_and_its_code():
    keys = frozenset(_template_keys("bug_report.md", MARKDOWN_TEMPLATE))
    text = analysed_text(ISSUE, keys)
    assert "Current Behavior" not in text and "I have looked" not in text and "Expected Behavior" not in text
    assert "version" not in text and "3.12 on `PyPy`" in text.splitlines()  # the answer to a template line stays
    assert "Debian" in text.splitlines()  # ... also where it replaced the template's example
    assert "Parser drops the trailing comma" in text and '`parse_list("a, b,")` drops the last item.' in text
    assert "```\n## Bug Report\n```" in text  # inside code, kept
    assert analysed_text(ISSUE, frozenset()) == ISSUE


def _repo(root: Path, template_path: str, template: str) -> Path:
    files = {
        template_path: template,
        "shop/parser.py": 'def parse_list(text):\n    """Split a comma list (a trailing comma too, as Debian\'s do)."""\n'
        "    return text.split(',')[:-1]\n",
        "shop/bug_report.py": 'def bug_report(current, expected):\n    """Current and expected behavior of a bug."""\n'
        "    return {'current behavior': current, 'expected behavior': expected}\n",
        "examples/documentation.py": "# examples of the documentation: looked at\nEXAMPLES = ['documentation']\n",
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def _top_and_keywords(root: Path) -> tuple[list[str], tuple[str, ...]]:
    index_repository(root, history=0)
    result = retrieve(load_kb(default_kb_dir(root)), ISSUE, outputs=("task_query",))
    return result.scope["path"].tolist()[:1], result.outputs["task_query"].keywords


def test_a_markdown_template_s_words_do_not_reach_the_ranking(tmp_path):
    top, keywords = _top_and_keywords(_repo(tmp_path, ".github/ISSUE_TEMPLATE/bug_report.md", MARKDOWN_TEMPLATE))
    assert top == ["shop/parser.py"]
    assert not {"behavior", "document", "exampl", "look"} & set(keywords)  # (stems)
    assert {"parse_list", "trail", "comma", "debian"} <= set(keywords) and "oper" not in keywords


def test_an_issue_form_s_labels_are_template_lines(tmp_path):
    _, keywords = _top_and_keywords(_repo(tmp_path, ".github/ISSUE_TEMPLATE/bug.yml", FORM_TEMPLATE))
    assert "document" not in keywords  # the checkbox's label; the form's description is never in an issue
    assert "expect" in keywords  # not a label of this form


def test_without_templates_the_task_is_read_whole(tmp_path):
    _, keywords = _top_and_keywords(_repo(tmp_path, "docs/bug_report_howto.md", MARKDOWN_TEMPLATE))
    assert {"behavior", "document"} <= set(keywords)
