#!/usr/bin/env python3
"""Lists every public enumerator Doxygen's XML output (the directory given) has no description
for, as file:line: warnings, and fails when there is one. Doxygen 1.9's WARN_IF_UNDOCUMENTED
warns about undocumented enums but not about their values."""
import glob
import sys
import xml.etree.ElementTree as ET


def text_of(node):
    return "".join(node.itertext()).strip() if node is not None else ""


def undocumented(xml_dir):
    found = set()
    for path in glob.glob(f"{xml_dir}/*.xml"):
        for member in ET.parse(path).iter("memberdef"):
            if member.get("kind") != "enum" or member.get("prot") not in (None, "public"):
                continue
            where = member.find("location")
            for value in member.findall("enumvalue"):
                if text_of(value.find("briefdescription")) or text_of(value.find("detaileddescription")):
                    continue
                found.add((where.get("file"), int(where.get("line")), member.findtext("name"), value.findtext("name")))
    return sorted(found)


def main():
    missing = undocumented(sys.argv[1])
    for file, line, enum, value in missing:
        print(f"{file}:{line}: warning: enumerator {value} of {enum} is not documented")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
