"""Writes small hand-made mirror-layout dockets for the tests (client, stand-in, stages).

Files are shaped like the real mirrulations ones in ../shared/realdata (comment files are full
``include=attachments`` responses), trimmed to the fields the tests and the stand-in read.
Paths come from ``devtools.mirror_layout``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

from devtools import mirror_layout as layout
from devtools.corpus_changes import api_time, object_id_for


class MirrorBuilder:
    def __init__(self, root: Path, docket_id: str, agency: str | None = None) -> None:
        self.root = Path(root)
        self.docket_id = docket_id
        self.agency = agency or docket_id.split("-")[0]
        self.folders = layout.DocketFolders.new(self.root, self.agency, docket_id)

    def docket(self, modified: str = "2025-09-23T12:31:54Z") -> MirrorBuilder:
        data = {
            "id": self.docket_id,
            "type": "dockets",
            "attributes": {
                "agencyId": self.agency,
                "docketType": "Rulemaking",
                "modifyDate": modified,
                "objectId": object_id_for(self.docket_id),
                "title": f"Docket {self.docket_id}",
                "dkAbstract": None,
                "keywords": None,
                "rin": None,
            },
            "links": {"self": f"https://api.regulations.gov/v4/dockets/{self.docket_id}"},
        }
        layout.write_json(self.folders.docket_file(), {"data": data})
        return self

    def document(
        self,
        seq: int = 1,
        *,
        posted: str = "2025-07-22T04:00:00Z",
        comment_end: str | None = "2025-09-23T03:59:59Z",
        content: bytes | None = None,
    ) -> str:
        """Write a proposed-rule document; returns its objectId (what comments point at)."""
        doc_id = f"{self.docket_id}-{seq:04d}"
        file_formats = None
        if content is not None:
            layout.write_file(self.folders.document_content(doc_id), content)
            file_formats = [
                {
                    "fileUrl": f"https://downloads.regulations.gov/{doc_id}/content.pdf",
                    "format": "pdf",
                    "size": len(content),
                }
            ]
        attrs = {
            "agencyId": self.agency,
            "docketId": self.docket_id,
            "documentType": "Proposed Rule",
            "frDocNum": f"2025-{10000 + seq}",
            "commentStartDate": posted,
            "commentEndDate": comment_end,
            "modifyDate": posted,
            "postedDate": posted,
            "objectId": object_id_for(doc_id),
            "title": f"Proposed rule {doc_id}",
            "withdrawn": False,
            "openForComment": False,
            "fileFormats": file_formats,
            "subtype": None,
        }
        data = {
            "id": doc_id,
            "type": "documents",
            "attributes": attrs,
            "links": {"self": f"https://api.regulations.gov/v4/documents/{doc_id}"},
        }
        layout.write_json(self.folders.document_file(doc_id), {"data": data})
        return attrs["objectId"]

    def comments(
        self,
        on_object_id: str,
        modified: Iterable[str | datetime],
        *,
        first_seq: int = 2,
        on_document: str | None = None,
    ) -> list[str]:
        """One comment per modification time, numbered from ``first_seq``; returns their ids."""
        ids = []
        for offset, when in enumerate(modified):
            comment_id = f"{self.docket_id}-{first_seq + offset:04d}"
            self.comment(comment_id, on_object_id, api_time(when), on_document=on_document)
            ids.append(comment_id)
        return ids

    def comment(
        self,
        comment_id: str,
        on_object_id: str,
        modified: str,
        *,
        attachments: Sequence[bytes] = (),
        on_document: str | None = None,
    ) -> None:
        included = []
        for n, content in enumerate(attachments, start=1):
            layout.write_file(self.folders.comment_attachment(comment_id, n, "pdf"), content)
            included.append(
                {
                    "id": f"{object_id_for(comment_id)[:-1]}{n}",
                    "type": "attachments",
                    "attributes": {
                        "docOrder": n,
                        "title": f"attachment {n}",
                        "modifyDate": modified,
                        "fileFormats": [
                            {
                                "fileUrl": f"https://downloads.regulations.gov/{comment_id}/attachment_{n}.pdf",
                                "format": "pdf",
                                "size": len(content),
                            }
                        ],
                    },
                }
            )
        attrs = {
            "commentOn": on_object_id,
            "commentOnDocumentId": on_document or f"{self.docket_id}-0001",
            "agencyId": self.agency,
            "comment": "See attached file(s)",
            "docketId": self.docket_id,
            "documentType": "Public Submission",
            "objectId": object_id_for(comment_id),
            "modifyDate": modified,
            "postedDate": modified,
            "title": f"Comment from Tester {comment_id[-4:]}",
            "withdrawn": False,
            "reasonWithdrawn": None,
            "subtype": "Public Comment",
        }
        data = {
            "id": comment_id,
            "type": "comments",
            "attributes": attrs,
            "links": {"self": f"https://api.regulations.gov/v4/comments/{comment_id}"},
            "relationships": {
                "attachments": {"data": [{"id": i["id"], "type": "attachments"} for i in included]}
            },
        }
        layout.write_json(
            self.folders.comment_file(comment_id), {"data": data, "included": included}
        )

    def mark_unavailable(self, comment_id: str) -> None:
        self.folders.comment_file(comment_id).unlink(missing_ok=True)
        layout.write_tombstone(self.folders.comment_tombstone(comment_id))
