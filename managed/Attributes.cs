// The attributes that mark a program's persistent state (paper section 3.1).
// The runtime reads them natively when it builds a class's persistent class map;
// nothing here is looked up through reflection at run time.
using System;

namespace SPersistence
{
	/// <summary>
	/// On a class: instances of this class (and of classes derived from it) may be
	/// persisted; their [SPersistentField] fields are their persistent state, the other
	/// fields are not persisted (a restored object has them at their default value, and
	/// no constructor runs).
	/// On a struct: allowed, and changes nothing. A struct is persisted whole wherever a
	/// persistent field or an array holds it, with every one of its instance fields,
	/// marked or not (a struct is a value: persisting a part of it
	/// would restore a different value); it needs no attribute, and this one only says so.
	/// A boxed struct (a struct stored as object) cannot be persisted.
	/// </summary>
	[AttributeUsage (AttributeTargets.Class | AttributeTargets.Struct, Inherited = true, AllowMultiple = false)]
	public sealed class SPersistentAttribute : Attribute
	{
		/// <summary>
		/// The full names ("Namespace.Outer+Inner") this class had in earlier versions
		/// of the program, in any assembly: a snapshot that names one of them restores
		/// into this class (and so do arrays of it and generic types over it).
		/// </summary>
		public string[] FormerNames { get; set; }

		/// <summary>
		/// Fields a restored snapshot has and this class does not (removed by an upgrade,
		/// or added by the newer version a downgrade left) are kept as unknown data and
		/// written into every later snapshot, so that the version that has them gets them
		/// back (as IExtensibleDataObject does). True: this class drops them instead.
		/// Not inherited: each class says it for its own snapshots' fields.
		/// </summary>
		public bool DropUnknown { get; set; }
	}

	/// <summary>
	/// This instance field of an [SPersistent] class is part of the persistent state of
	/// its object. On a struct's field it changes nothing: a struct is persisted with all
	/// of its fields (see <see cref="SPersistentAttribute"/>).
	/// </summary>
	[AttributeUsage (AttributeTargets.Field, Inherited = true, AllowMultiple = false)]
	public sealed class SPersistentFieldAttribute : Attribute
	{
		/// <summary>
		/// The names this field had in earlier versions of the program: a snapshot's
		/// value under one of them restores into this field (with the usual rules:
		/// the same kind, or a widening). On a struct's field too.
		/// </summary>
		public string[] FormerNames { get; set; }

		/// <summary>
		/// The value this field gets in an object restored from a snapshot that does not
		/// have it (the field was added since): a number, bool or char that the field's
		/// type holds (an enum's value as its number: <c>Default = (int)Mode.Auto</c>).
		/// Without it, such a field is 0, false or null: a restore runs no constructor
		/// and no field initializer. Objects made with <c>new</c> do not use it.
		/// </summary>
		public object Default { get; set; }
	}

	/// <summary>
	/// This method, property setter or indexer setter updates persistent fields.
	/// In the annotating barrier mode only such methods get write barriers.
	/// </summary>
	[AttributeUsage (AttributeTargets.Method | AttributeTargets.Property | AttributeTargets.Constructor, Inherited = true, AllowMultiple = false)]
	public sealed class SPersistentUpdateAttribute : Attribute
	{
	}
}
