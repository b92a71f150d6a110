//! Tracepoint `format` files: parsing, pure (no I/O).

use std::collections::HashMap;
use std::fmt;

/// One field of a tracepoint record, from its `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name (array suffix removed).
    pub name: String,
    /// C type as the format file spells it (`unsigned int`, `__data_loc char[]`).
    pub ctype: String,
    /// Byte offset in the record.
    pub offset: usize,
    /// Size in bytes (4 for a `__data_loc`).
    pub size: usize,
    /// Signed integer.
    pub signed: bool,
    /// A `__data_loc` (dynamic array): the value is `len << 16 | offset`.
    pub data_loc: bool,
    /// A fixed array (`char comm[16]`, `u8 srcaddr[28]`).
    pub array: bool,
}

/// A tracepoint's `format` file, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    /// System (`rpcrdma`).
    pub system: String,
    /// Event name (`xprtrdma_marshal`).
    pub name: String,
    /// The event's id, as `common_type` in every record.
    pub id: u16,
    /// Fields, common ones included.
    pub fields: Vec<Field>,
}

/// A format file that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// What was wrong.
    pub what: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tracepoint format: {}", self.what)
    }
}

impl std::error::Error for FormatError {}

impl Format {
    /// Parses the text of a `format` file.
    ///
    /// # Errors
    /// When the name, the id or a field line cannot be read.
    pub fn parse(system: &str, text: &str) -> Result<Format, FormatError> {
        let err = |what: String| FormatError { what };
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(n) = line.strip_prefix("name:") {
                name = Some(n.trim().to_string());
            } else if let Some(n) = line.strip_prefix("ID:") {
                id = Some(
                    n.trim()
                        .parse::<u16>()
                        .map_err(|_| err(format!("bad ID line {line:?}")))?,
                );
            } else if line.starts_with("field:") {
                fields.push(
                    parse_field(line).ok_or_else(|| err(format!("bad field line {line:?}")))?,
                );
            }
        }
        Ok(Format {
            system: system.to_string(),
            name: name.ok_or_else(|| err("no name line".into()))?,
            id: id.ok_or_else(|| err("no ID line".into()))?,
            fields,
        })
    }

    /// A field by name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Bytes of the fixed part of the record.
    pub fn fixed_len(&self) -> usize {
        self.fields
            .iter()
            .map(|f| f.offset + f.size)
            .max()
            .unwrap_or(0)
    }
}

/// `field:unsigned int xid;\toffset:12;\tsize:4;\tsigned:0;`
pub(super) fn parse_field(line: &str) -> Option<Field> {
    let mut decl = None;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for part in line.split(';') {
        let part = part.trim();
        if let Some(d) = part.strip_prefix("field:") {
            decl = Some(d.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl?;
    let data_loc = decl.starts_with("__data_loc") || decl.starts_with("__rel_loc");
    let last = decl.rsplit(|c: char| c.is_whitespace()).next()?;
    let (name, array) = match last.find('[') {
        Some(i) => (&last[..i], true),
        None => (last, false),
    };
    let ctype = decl[..decl.len() - last.len()].trim().to_string();
    // `__data_loc char[] addr`: the brackets belong to the type.
    let array = array && !data_loc;
    Some(Field {
        name: name.to_string(),
        ctype,
        offset: offset?,
        size: size?,
        signed,
        data_loc,
        array,
    })
}

/// Every format of the wanted systems, by event id.
#[derive(Debug, Clone, Default)]
pub struct FormatSet {
    by_id: HashMap<u16, Format>,
}

impl FormatSet {
    /// Adds one format.
    pub fn insert(&mut self, f: Format) {
        self.by_id.insert(f.id, f);
    }

    /// The format of an event id.
    pub fn get(&self, id: u16) -> Option<&Format> {
        self.by_id.get(&id)
    }

    /// A format by system and name.
    pub fn by_name(&self, system: &str, name: &str) -> Option<&Format> {
        self.by_id
            .values()
            .find(|f| f.system == system && f.name == name)
    }

    /// Number of formats.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// No formats at all.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Formats in (system, name) order.
    pub fn sorted(&self) -> Vec<&Format> {
        let mut v: Vec<&Format> = self.by_id.values().collect();
        v.sort_by(|a, b| (&a.system, &a.name).cmp(&(&b.system, &b.name)));
        v
    }
}
