//! Parsing HTML within a nesting depth. html5ever's tree builder scans its stack of open
//! elements for many start and end tags, so its time grows with the square of the nesting
//! depth, which it does not bound (servo/html5ever#788): 100,000 nested `<div>`s took 54 s, and
//! a 16 MiB file holds 3 million. Browsers stop nesting at 512 (Blink and WebKit); here the
//! document is fed to the parser in pieces, the sink measures the depth of every element it
//! inserts, and the parse stops at the first piece that went past [`MAX_DEPTH`]: what it costs
//! is bounded by the input's length times that depth.

use std::borrow::Cow;
use std::cell::{Cell, Ref};
use std::rc::Rc;

use ego_tree::NodeId;
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use scraper::{Html, HtmlTreeSink};

/// Deepest element nesting a document may have (from the document's root: `<html>` is 1), as
/// browsers nest at most.
pub(crate) const MAX_DEPTH: usize = 512;

/// Bytes fed to the parser at a time: past the depth bound, the parse stops within one piece.
const PIECE_BYTES: usize = 4096;

/// `source` parsed as a browser parses it, or `None` if an element is nested deeper than
/// [`MAX_DEPTH`].
pub(crate) fn parse_within_depth(source: &str) -> Option<Html> {
    let too_deep = Rc::new(Cell::new(false));
    let sink = DepthBound {
        inner: HtmlTreeSink::new(Html::new_document()),
        too_deep: Rc::clone(&too_deep),
    };
    let mut parser = html5ever::parse_document(sink, Default::default());
    let mut rest = source;
    while !rest.is_empty() {
        let mut end = rest.len().min(PIECE_BYTES);
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, after) = rest.split_at(end);
        parser.process(StrTendril::from_slice(piece));
        if too_deep.get() {
            return None;
        }
        rest = after;
    }
    let html = parser.finish();
    (!too_deep.get()).then_some(html)
}

/// scraper's sink, which notes when an element is inserted deeper than [`MAX_DEPTH`].
struct DepthBound {
    inner: HtmlTreeSink,
    too_deep: Rc<Cell<bool>>,
}

impl DepthBound {
    /// Notes an element inserted under `parent` past the bound (its ancestors are counted, at
    /// most one past the bound: the cost of an insertion is bounded too).
    fn inserting(&self, parent: NodeId, child: &NodeOrText<NodeId>) {
        if matches!(child, NodeOrText::AppendText(_)) || self.too_deep.get() {
            return;
        }
        let html = self.inner.0.borrow();
        let depth = html
            .tree
            .get(parent)
            .map_or(0, |p| p.ancestors().take(MAX_DEPTH).count() + 1);
        if depth > MAX_DEPTH {
            self.too_deep.set(true);
        }
    }

    fn parent_of(&self, node: NodeId) -> Option<NodeId> {
        let html = self.inner.0.borrow();
        html.tree.get(node)?.parent().map(|p| p.id())
    }
}

impl TreeSink for DepthBound {
    type Output = Html;
    type Handle = NodeId;
    type ElemName<'a> = Ref<'a, QualName>;

    fn finish(self) -> Html {
        self.inner.finish()
    }

    fn parse_error(&self, msg: Cow<'static, str>) {
        self.inner.parse_error(msg);
    }

    fn get_document(&self) -> NodeId {
        self.inner.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Ref<'a, QualName> {
        self.inner.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        self.inner.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.inner.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.inner.create_pi(target, data)
    }

    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        self.inserting(*parent, &child);
        self.inner.append(parent, child);
    }

    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        let parent = self.parent_of(*element).unwrap_or(*prev_element);
        self.inserting(parent, &child);
        self.inner
            .append_based_on_parent_node(element, prev_element, child);
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.inner
            .append_doctype_to_document(name, public_id, system_id);
    }

    fn mark_script_already_started(&self, node: &NodeId) {
        self.inner.mark_script_already_started(node);
    }

    fn pop(&self, node: &NodeId) {
        self.inner.pop(node);
    }

    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.inner.get_template_contents(target)
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.inner.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        if let Some(parent) = self.parent_of(*sibling) {
            self.inserting(parent, &new_node);
        }
        self.inner.append_before_sibling(sibling, new_node);
    }

    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs);
    }

    fn associate_with_form(
        &self,
        target: &NodeId,
        form: &NodeId,
        nodes: (&NodeId, Option<&NodeId>),
    ) {
        self.inner.associate_with_form(target, form, nodes);
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.inner.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        self.inner.reparent_children(node, new_parent);
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &NodeId) -> bool {
        self.inner
            .is_mathml_annotation_xml_integration_point(handle)
    }

    fn set_current_line(&self, line_number: u64) {
        self.inner.set_current_line(line_number);
    }

    fn allow_declarative_shadow_roots(&self, intended_parent: &NodeId) -> bool {
        self.inner.allow_declarative_shadow_roots(intended_parent)
    }

    fn attach_declarative_shadow(
        &self,
        location: &NodeId,
        template: &NodeId,
        attrs: &[Attribute],
    ) -> bool {
        self.inner
            .attach_declarative_shadow(location, template, attrs)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, option: &NodeId) {
        self.inner
            .maybe_clone_an_option_into_selectedcontent(option);
    }
}
