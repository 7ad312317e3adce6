/* craft-chain.c: see craft-chain.h. */
#include "craft-chain.h"

#include "fake-objects.h"
#include "sp-crc32c.h"
#include "sp-layout.h"

void
part_begin (Part *p, uint64_t sequence, const Part *base, const Part *prev)
{
	sp_buf_init (&p->b);
	p->h = (SpSnapHeader){ .sequence = sequence, .time_ns = 1000 + sequence };
	if (prev) {
		p->h.required_flags = SP_FLAG_DELTA;
		p->h.base_sequence = base->h.sequence;
		p->h.prev_sequence = prev->h.sequence;
		p->h.prev_crc = prev->crc;
		p->h.prior_objects = prev->nobjects;
	}
	uint8_t hdr [SP_FORMAT_HEADER_MAX];
	sp_format_write_header (hdr, &p->h);
	sp_buf_put_bytes (&p->b, hdr, sp_format_header_size (&p->h));
}

void
part_finish (Part *p, uint32_t nclasses, uint32_t nobjects, uint32_t nroots)
{
	uint8_t t [SP_FORMAT_TRAILER_SIZE];
	sp_format_write_trailer (t, &(SpSnapTrailer){ .nclasses = nclasses, .nobjects = nobjects, .nroots = nroots });
	sp_buf_put_bytes (&p->b, t, sizeof t);
	p->crc = sp_crc32c (0, p->b.data, p->b.len - 4);
	sp_put_le (p->b.data + p->b.len - 4, p->crc, 4);
	p->nobjects = nobjects;
}

void
put_class_node (SpBuf *b, uint64_t id)
{
	sp_buf_put_u8 (b, SP_REC_CLASS);
	sp_buf_put_varint (b, id);
	sp_buf_put_u8 (b, SP_CLASS_OBJECT);
	sp_buf_put_str (b, "App");
	sp_buf_put_str (b, "App.Node");
	sp_buf_put_varint (b, 2);
	sp_buf_put_str (b, "value");
	sp_buf_put_u8 (b, SP_KIND_I4);
	sp_buf_put_str (b, "next");
	sp_buf_put_u8 (b, SP_KIND_REF);
	sp_buf_put_str (b, "App.Node");
}

void
put_class_ints (SpBuf *b, uint64_t id)
{
	sp_buf_put_u8 (b, SP_REC_CLASS);
	sp_buf_put_varint (b, id);
	sp_buf_put_u8 (b, SP_CLASS_ARRAY);
	sp_buf_put_str (b, "mscorlib");
	sp_buf_put_str (b, "System.Int32[]");
	sp_buf_put_varint (b, 1);
	sp_buf_put_str (b, "");
	sp_buf_put_u8 (b, SP_KIND_I4);
}

void
put_node (SpBuf *b, uint64_t lid, uint64_t class_id, int32_t value, uint64_t next)
{
	sp_buf_put_u8 (b, SP_REC_OBJECT);
	sp_buf_put_varint (b, lid);
	sp_buf_put_varint (b, class_id);
	sp_buf_put_le (b, (uint32_t)value, 4);
	sp_buf_put_varint (b, next);
}

void
put_ints (SpBuf *b, const int32_t *v, uint64_t n)
{
	sp_buf_put_varint (b, n);
	for (uint64_t i = 0; i < n; i++)
		sp_buf_put_le (b, (uint32_t)v [i], 4);
}

void
put_patch (SpBuf *b, uint64_t lid, uint64_t class_id, uint64_t start, const int32_t *v, uint64_t n)
{
	sp_buf_put_u8 (b, SP_REC_PATCH);
	sp_buf_put_varint (b, lid);
	sp_buf_put_varint (b, class_id);
	sp_buf_put_varint (b, start);
	put_ints (b, v, n);
}

void
put_root (SpBuf *b, uint64_t id, uint64_t lid)
{
	sp_buf_put_u8 (b, SP_REC_ROOT);
	sp_buf_put_varint (b, id);
	sp_buf_put_varint (b, lid);
}


void
craft_register_classes (void)
{
	if (fake_class_find ("App.Node"))
		return;
	FakeClass *node = fake_class_object ("App", "App.Node");
	fake_class_add_field (node, "value", SP_KIND_I4, NULL);
	fake_class_add_field (node, "next", SP_KIND_REF, "App.Node");
	fake_class_prim_array (SP_KIND_I4);
}
